/**
 * DSSE v1 (github.com/secure-systems-lab/dsse): what a signer signs for an envelope, and the
 * one-signature envelope the deployment's signed documents use (inference receipts, usage
 * statements), signed by the auth worker's `sign` RPC with the token keys (verify with the JWKS).
 */
import { base64Encode } from './encoding'

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

/** The algorithm signed documents use: ML-DSA-65 of the token keys, published in the JWKS. */
export const DOCUMENT_SIGNING_ALGORITHM = 'ML-DSA-65'

/** The auth worker's `sign` RPC, as a document's issuer sees it (the structural type of AuthWorker.sign). */
export interface DocumentSigner {
  sign(
    data: Uint8Array,
    alg: typeof DOCUMENT_SIGNING_ALGORITHM,
  ): Promise<
    | { readonly ok: true; readonly kid: string; readonly alg: string; readonly signature: Uint8Array }
    | { readonly ok: false; readonly code: string; readonly message: string }
  >
}

/** A DSSE v1 envelope (payload and signatures in standard base64). */
export interface DsseEnvelope<T extends string = string> {
  payloadType: T
  payload: string
  signatures: { keyid: string; sig: string }[]
}

export type SignedDocument<T extends string = string> =
  | { ok: true; envelope: DsseEnvelope<T>; kid: string }
  | { ok: false; code: string; message: string }

/** Signs `payload` as a DSSE envelope of `payloadType` with the token keys' ML-DSA-65 key. */
export async function signDocument<T extends string>(
  signer: DocumentSigner,
  payloadType: T,
  payload: Uint8Array,
): Promise<SignedDocument<T>> {
  const signed = await signer.sign(preAuthEncoding(payloadType, payload), DOCUMENT_SIGNING_ALGORITHM)
  if (!signed.ok) return { ok: false, code: signed.code, message: signed.message }
  return {
    ok: true,
    kid: signed.kid,
    envelope: {
      payloadType,
      payload: base64Encode(payload),
      signatures: [{ keyid: signed.kid, sig: base64Encode(signed.signature) }],
    },
  }
}
