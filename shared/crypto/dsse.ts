/** DSSE v1 (github.com/secure-systems-lab/dsse): what a signer signs for an envelope. */
const utf8 = new TextEncoder()

/** DSSE v1 pre-authentication encoding: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body. */
export function preAuthEncoding(payloadType: string, payload: Uint8Array): Uint8Array {
  const type = utf8.encode(payloadType)
  const head = utf8.encode(`DSSEv1 ${type.length} ${payloadType} ${payload.length} `)
  const out = new Uint8Array(head.length + payload.length)
  out.set(head)
  out.set(payload, head.length)
  return out
}
