/**
 * A worker for bench/identity.ts: runs ML-DSA-65 signatures and verifications inside workerd
 * (the production runtime), N at a time, on either implementation the product has
 * (shared/crypto/post-quantum.ts): `?impl=webcrypto` (the runtime's, with webcrypto_modern_algorithms)
 * or `?impl=noble` (the JavaScript fallback), so one run compares them.
 */
import {
  type MlDsaSigner,
  type MlDsaVerifier,
  mlDsaImplementation,
  type PostQuantumImplementation,
} from '../shared/crypto/post-quantum'

const message = new TextEncoder().encode('x'.repeat(600))
const prepared = new Map<
  PostQuantumImplementation,
  { signer: MlDsaSigner; verifier: MlDsaVerifier; signature: Uint8Array }
>()

// Randomness is not available at global scope in workerd: prepare on the first request.
async function keys(impl: PostQuantumImplementation) {
  let entry = prepared.get(impl)
  if (!entry) {
    const implementation = mlDsaImplementation(impl)
    const signer = await implementation.signerFromSeed('ML-DSA-65', new Uint8Array(32).fill(7))
    const verifier = await implementation.verifierFor('ML-DSA-65', signer.publicKey)
    entry = { signer, verifier, signature: await signer.sign(message) }
    prepared.set(impl, entry)
  }
  return entry
}

export default {
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url)
    const n = Math.min(Number(url.searchParams.get('n') ?? '10'), 5000)
    const impl = url.searchParams.get('impl') === 'noble' ? 'noble' : 'webcrypto'
    if (url.pathname !== '/sign' && url.pathname !== '/verify') return new Response('ok')
    const { signer, verifier, signature } = await keys(impl)
    let ok = 0
    if (url.pathname === '/sign') {
      for (let i = 0; i < n; i++) ok += (await signer.sign(message)).length > 0 ? 1 : 0
    } else {
      for (let i = 0; i < n; i++) ok += (await verifier.verify(message, signature)) ? 1 : 0
    }
    return Response.json({ n, ok })
  },
}
