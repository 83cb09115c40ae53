/**
 * A worker for bench/crypto-timings.ts: runs the product's own crypto code inside workerd, N
 * operations per request, so the benchmark can time them from outside (workerd's clock does not
 * advance during pure computation in production, so the worker does not time itself).
 *   /sign?alg=&n=     signAccessToken n times      /verify?alg=&n=  verifyAccessToken n times
 *   /self-test        a fresh self-test suite      /argon2?op=hash|verify  one Argon2id operation
 *   /receipt?n=       signReceipt n times: an inference receipt's DSSE envelope, ML-DSA-65
 * Every answer names the ML-DSA implementation the isolate picked (shared/crypto/post-quantum.ts):
 * bench/crypto-timings.ts runs this worker with and without webcrypto_modern_algorithms.
 */

import {
  type ReceiptStatement,
  receiptPayload,
  signReceipt,
} from '../durable-objects/reasoning-job/inference-receipt'
import {
  buildAccessTokenClaims,
  buildJwks,
  createSelfTestSuite,
  generateSigningKey,
  hashPassword,
  JWS_ALGORITHMS,
  type JwsAlgorithm,
  type SigningKey,
  signAccessToken,
  verifyAccessToken,
  verifyPassword,
} from '../shared/crypto'
import { postQuantumImplementation } from '../shared/crypto/post-quantum'

const ISSUER = 'https://auth.svc.test'
const keys = new Map<JwsAlgorithm, { key: SigningKey; token: string }>()
let storedPassword: string | undefined

const claims = () =>
  buildAccessTokenClaims({ sub: 'sa:bench', aud: 'platform', iss: ISSUER, ttlSeconds: 600, tenantId: 't' })

// Randomness is not available at global scope in workerd: keys are made on first use.
async function prepared(alg: JwsAlgorithm) {
  let entry = keys.get(alg)
  if (!entry) {
    const key = await generateSigningKey(alg)
    entry = { key, token: await signAccessToken(claims(), key) }
    keys.set(alg, entry)
  }
  return entry
}

/** A receipt as a finished three-candidate job writes it (the sizes matter, not the values). */
function receiptStatement(): ReceiptStatement {
  const id = crypto.randomUUID()
  return {
    _type: 'https://svc.dev/inference-receipt/v1',
    receipt_id: crypto.randomUUID(),
    issued_at: new Date().toISOString(),
    job: {
      id,
      tenant_id: 'tenant-bench',
      model: 'svc-quantum-reasoning-1',
      product: 'quantum_reasoning',
      scoring_method: 'qaoa_selection',
      status: 'succeeded',
      created_at: new Date().toISOString(),
      completed_at: new Date().toISOString(),
    },
    prompt_digest: `sha256:${'ab'.repeat(32)}`,
    candidates: [0, 1, 2].map((index) => ({
      index,
      digest: `sha256:${String(index).repeat(64)}`,
      provider: 'simulated',
      scores: { coherence: 0.8, relevance: 0.7, safety: 1 },
    })),
    selection: {
      selected_index: 1,
      selector_backend: 'simulator',
      selector_confidence: 0.91,
      fallback_reason: null,
      used_real_qubits: false,
      real_request_status: 'not_requested',
    },
    usage: { prompt_tokens: 412, completion_tokens: 1536, qpu_shots: 0 },
  }
}

export default {
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url)
    const implementation = postQuantumImplementation('ML-DSA-65')
    const n = Math.min(Number(url.searchParams.get('n') ?? '1'), 10_000)
    const alg = (url.searchParams.get('alg') ?? 'ML-DSA-65') as JwsAlgorithm
    if (url.pathname === '/sign' || url.pathname === '/verify') {
      if (!JWS_ALGORITHMS.includes(alg)) return new Response(`unknown alg ${alg}`, { status: 400 })
      const { key, token } = await prepared(alg)
      const jwks = buildJwks([key])
      let length = 0
      for (let i = 0; i < n; i++) {
        if (url.pathname === '/sign') length = (await signAccessToken(claims(), key)).length
        else
          await verifyAccessToken(token, {
            keys: jwks,
            allowedAlgorithms: [alg],
            audience: 'platform',
            issuer: ISSUER,
          })
      }
      return Response.json({ n, length: length || token.length, implementation })
    }
    if (url.pathname === '/self-test') {
      const report = await createSelfTestSuite().run()
      return Response.json({ passed: report.passed, tests: report.tests.length, implementation })
    }
    if (url.pathname === '/receipt') {
      const { key } = await prepared('ML-DSA-65')
      // The auth worker's sign RPC, without the RPC: the same key, the same bytes signed.
      const signer = {
        sign: async (data: Uint8Array) => ({
          ok: true as const,
          kid: key.kid,
          alg: key.alg,
          signature: await key.sign(data),
        }),
      }
      let bytes = 0
      for (let i = 0; i < n; i++) {
        const signed = await signReceipt(signer, receiptPayload(receiptStatement()))
        if (!signed.ok) return new Response(signed.message, { status: 500 })
        bytes = signed.envelope.payload.length
      }
      return Response.json({ n, payload_base64_chars: bytes, implementation })
    }
    if (url.pathname === '/argon2') {
      if (url.searchParams.get('op') === 'verify') {
        storedPassword ??= await hashPassword('correct horse battery staple')
        return Response.json({ ok: await verifyPassword('correct horse battery staple', storedPassword) })
      }
      return Response.json({ stored: await hashPassword('correct horse battery staple') })
    }
    return new Response('ok')
  },
}
