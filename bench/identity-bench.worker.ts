/**
 * A worker for bench/identity.ts: runs ML-DSA-65 signatures and verifications inside workerd
 * (the production runtime), N at a time, so the benchmark can report operations per second.
 */
import { ml_dsa65 } from '@noble/post-quantum/ml-dsa.js'

const message = new TextEncoder().encode('x'.repeat(600))
let keys: { secretKey: Uint8Array; publicKey: Uint8Array; signature: Uint8Array } | undefined

// Randomness is not available at global scope in workerd: prepare on the first request.
function prepared() {
  if (!keys) {
    const { secretKey, publicKey } = ml_dsa65.keygen(new Uint8Array(32).fill(7))
    keys = { secretKey, publicKey, signature: ml_dsa65.sign(message, secretKey) }
  }
  return keys
}

export default {
  fetch(request: Request): Response {
    const url = new URL(request.url)
    const n = Math.min(Number(url.searchParams.get('n') ?? '10'), 5000)
    const { secretKey, publicKey, signature } = prepared()
    let ok = 0
    if (url.pathname === '/sign') {
      for (let i = 0; i < n; i++) ok += ml_dsa65.sign(message, secretKey).length > 0 ? 1 : 0
    } else if (url.pathname === '/verify') {
      for (let i = 0; i < n; i++) ok += ml_dsa65.verify(signature, message, publicKey) ? 1 : 0
    } else {
      return new Response('ok')
    }
    return Response.json({ n, ok })
  },
}
