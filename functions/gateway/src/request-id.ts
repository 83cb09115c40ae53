/** Request ids: echo a well-formed inbound `x-request-id`, otherwise mint `req_<32 hex>`. */
const VALID_REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/

export function requestIdFor(inbound: string | null): string {
  if (inbound && VALID_REQUEST_ID.test(inbound)) return inbound
  return `req_${crypto.randomUUID().replaceAll('-', '')}`
}
