/**
 * Public trust pages (no credential): HTML for people, JSON for machines (`Accept:
 * application/json`, or `?format=json`), `Vary: Accept`.
 *
 * - /trust/conformance: the vector sets the implementations are checked against on every build,
 *   and the runtime self-tests of this deployment (when they last ran, each result, its vector).
 *   The self-tests run on the platform audit log's alarm; the page only reads the last report.
 * - /trust/entropy: where randomness comes from at each step, from the runtime's CSPRNG to every
 *   key, secret and nonce the product generates.
 *
 * Fast: the rendered page is kept per isolate for a minute, no self-test runs on the request path,
 * and `Cache-Control: public, max-age=60` lets the edge cache it.
 */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { auditLogOf } from '../../../durable-objects/audit-log/audit-client'
import { errorResponse } from '../../../shared/http/error-body'
import type { FamilyEnv } from '../../../shared/worker/family-app'
import { auditLogNamespace } from './audit-log'
import { ACVP_REVISIONS, SELF_TEST_SOURCES, VECTOR_SETS } from './conformance-manifest'
import type { PlatformEnv } from './platform.context'
import { BUILD_FACTS } from './posture'

const PAGE_TTL_MS = 60_000
const NOT_VALIDATED =
  "ML-DSA and ML-KEM run in the Workers runtime's WebCrypto (workerd, BoringSSL, with the webcrypto_modern_algorithms compatibility flag), and in the JavaScript library @noble/post-quantum only where a runtime lacks them; each runtime self-test names the implementation it tested. Ed25519 and SHA-2 run in WebCrypto, SHAKE256 and Argon2id in @noble/hashes. Passing these vectors shows the implementations compute the standards' answers; it is not a FIPS 140-3 (CMVP) validation, and none is claimed."

async function conformanceDocument(env: PlatformEnv) {
  const stored = await auditLogOf(auditLogNamespace(env), null).selfTests()
  return {
    object: 'conformance_evidence' as const,
    generated_at: new Date().toISOString(),
    validated_module: false,
    statement: NOT_VALIDATED,
    vector_sets: VECTOR_SETS.map((set) => ({ ...set, checked: 'on every build (npm test), before release' })),
    runtime_self_tests: stored
      ? {
          status: stored.report.passed ? ('passed' as const) : ('failed' as const),
          ran_at: new Date(stored.ranAt).toISOString(),
          where:
            'the platform worker (AuditLog platform object) of this deployment, re-run every AUDIT_SELF_TEST_INTERVAL_MS; every isolate also tests each algorithm before its first use',
          acvp_revisions: [...ACVP_REVISIONS],
          tests: stored.report.tests.map((t) => ({
            name: t.name,
            algorithm: t.algorithm,
            kind: t.kind,
            // Reports stored before implementations were recorded have none.
            implementation: t.implementation ?? null,
            passed: t.passed,
            vector: SELF_TEST_SOURCES[t.name] ?? null,
          })),
        }
      : {
          status: 'pending' as const,
          ran_at: null,
          where: "scheduled on the platform audit log's alarm",
          tests: [],
        },
    libraries: BUILD_FACTS.libraries.map(({ name, version, integrity, implements: algorithms }) => ({
      name,
      version,
      integrity,
      implements: algorithms,
    })),
  }
}

const CSPRNG = 'crypto.getRandomValues / crypto.randomUUID (workerd: BoringSSL RAND_bytes)'

function entropyDocument() {
  return {
    object: 'entropy_chain' as const,
    validated_entropy_source: false,
    statement:
      "No SP 800-90B entropy-source validation is claimed: the service relies on the platform's CSPRNG, as every Worker does.",
    chain: [
      {
        step: 'host',
        source:
          'The operating system of the Cloudflare machine running the isolate (kernel CSPRNG: getrandom), fed by hardware and interrupt noise',
      },
      {
        step: 'runtime',
        source:
          "workerd seeds BoringSSL's CTR-DRBG from the host; Web Crypto exposes it as crypto.getRandomValues, crypto.randomUUID and key generation. Isolates never share a generator state with the application.",
      },
      {
        step: 'libraries',
        source:
          "WebCrypto's ML-DSA signing and ML-KEM encapsulation draw from the same BoringSSL generator; @noble/post-quantum (the fallback) and @noble/hashes draw randomness only through crypto.getRandomValues (noble's randomBytes). None keeps a generator of its own.",
      },
    ],
    consumers: [
      {
        what: 'API keys (svc_sk_live_, svc_sk_test_)',
        bits: 256,
        from: CSPRNG,
        code: 'shared/auth/api-keys.ts',
      },
      {
        what: 'Refresh tokens (svc_rt_) and service-account secrets (svc_sa_)',
        bits: 256,
        from: CSPRNG,
        code: 'shared/auth/opaque-credentials.ts',
      },
      { what: 'Generated user passwords', bits: 256, from: CSPRNG, code: 'scripts/db/user-passwords.ts' },
      { what: 'Argon2id password salts', bits: 128, from: CSPRNG, code: 'shared/crypto/password.ts' },
      {
        what: 'ML-DSA signing keys (token and checkpoint keys)',
        bits: 256,
        from: `the 32-byte seed ξ from ${CSPRNG} (or Node's crypto.getRandomValues, OpenSSL, when generated with npm run workspace -- generate-signing-keys or npm start)`,
        code: 'shared/crypto/jwk.ts generateSigningKey',
      },
      {
        what: 'Ed25519 signing keys',
        bits: 256,
        from: 'WebCrypto generateKey (the same CSPRNG); signatures are deterministic (RFC 8032), no per-signature randomness',
        code: 'shared/crypto/jwk.ts',
      },
      {
        what: 'ML-DSA signature randomness (hedged signing, FIPS 204 rnd)',
        bits: 256,
        from: `32 fresh bytes per signature from ${CSPRNG}, inside WebCrypto sign (noble's ml_dsa*.sign where the runtime lacks ML-DSA)`,
        code: 'shared/crypto/post-quantum.ts',
      },
      {
        what: 'Access-token jti',
        bits: 122,
        from: 'crypto.randomUUID (version 4)',
        code: 'shared/crypto/access-token.ts',
      },
      {
        what: 'Request ids, run ids, metering reservation ids, audit-log idempotency keys',
        bits: 122,
        from: 'crypto.randomUUID (identifiers, not secrets)',
        code: 'functions/gateway/src/request-id.ts, shared/metering, durable-objects/audit-log/audit-client.ts',
      },
      {
        what: 'Audit-log checkpoints and proofs',
        bits: 0,
        from: 'no randomness: Merkle hashing is deterministic; the ML-DSA-44 cosignature uses hedged signing randomness as above',
        code: 'shared/audit/',
      },
    ],
  }
}

const cache = new Map<string, { at: number; body: string; html: string }>()

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`)
}

function page(title: string, sections: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)}</title><style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#111}table{border-collapse:collapse;width:100%;margin:1rem 0}td,th{border-bottom:1px solid #ddd;padding:.35rem .5rem;text-align:left;vertical-align:top}th{background:#f6f6f6}.ok{color:#0a6a2a}.bad{color:#a00}code{font-size:90%}</style></head><body><h1>${escapeHtml(title)}</h1>${sections}<p>Machine-readable: the same URL with <code>Accept: application/json</code>.</p></body></html>`
}

function table(headers: string[], rows: string[][]): string {
  const head = headers.map((h) => `<th>${escapeHtml(h)}</th>`).join('')
  const body = rows.map((r) => `<tr>${r.map((cell) => `<td>${cell}</td>`).join('')}</tr>`).join('')
  return `<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`
}

function conformanceHtml(doc: Awaited<ReturnType<typeof conformanceDocument>>): string {
  const runtime = doc.runtime_self_tests
  const status =
    runtime.status === 'pending'
      ? '<p>The runtime self-tests have not run in this deployment yet; they are scheduled.</p>'
      : `<p>Last run: <strong>${escapeHtml(runtime.ran_at ?? '')}</strong> in ${escapeHtml(runtime.where)}: <strong class="${runtime.status === 'passed' ? 'ok' : 'bad'}">${runtime.status}</strong>.</p>`
  return page(
    'Conformance evidence',
    `<p>${escapeHtml(doc.statement)}</p><h2>Runtime self-tests</h2>${status}${table(
      ['test', 'algorithm', 'implementation', 'result', 'vector'],
      runtime.tests.map((t) => [
        `<code>${escapeHtml(t.name)}</code>`,
        escapeHtml(t.algorithm),
        escapeHtml(t.implementation ?? ''),
        t.passed ? '<span class="ok">passed</span>' : '<span class="bad">failed</span>',
        escapeHtml(t.vector ?? ''),
      ]),
    )}<h2>Vector sets checked on every build</h2>${table(
      ['vector set', 'source', 'revision', 'cases', 'implementations', 'test'],
      doc.vector_sets.map((v) => [
        escapeHtml(v.name),
        escapeHtml(v.source),
        escapeHtml(v.revision),
        String(v.cases),
        escapeHtml(v.implementation),
        `<code>${escapeHtml(v.test)}</code>`,
      ]),
    )}<h2>Libraries</h2>${table(
      ['library', 'version', 'integrity', 'implements'],
      doc.libraries.map((l) => [
        escapeHtml(l.name),
        escapeHtml(l.version),
        `<code>${escapeHtml(l.integrity.slice(0, 24))}…</code>`,
        escapeHtml(l.implements.join(', ')),
      ]),
    )}`,
  )
}

function entropyHtml(doc: ReturnType<typeof entropyDocument>): string {
  return page(
    'Entropy chain',
    `<p>${escapeHtml(doc.statement)}</p><h2>Where randomness comes from</h2><ol>${doc.chain
      .map((s) => `<li><strong>${escapeHtml(s.step)}</strong>: ${escapeHtml(s.source)}</li>`)
      .join('')}</ol><h2>What uses it</h2>${table(
      ['what', 'bits', 'from', 'code'],
      doc.consumers.map((c) => [
        escapeHtml(c.what),
        String(c.bits),
        escapeHtml(c.from),
        `<code>${escapeHtml(c.code)}</code>`,
      ]),
    )}`,
  )
}

function wantsJson(c: Context): boolean {
  if (c.req.query('format') === 'json') return true
  const accept = c.req.header('accept') ?? ''
  return accept.includes('application/json') && !accept.includes('text/html')
}

async function serve(
  c: Context<FamilyEnv<PlatformEnv>>,
  key: string,
  build: () => Promise<{ body: string; html: string }>,
): Promise<Response> {
  let entry = cache.get(key)
  if (!entry || Date.now() - entry.at > PAGE_TTL_MS) {
    entry = { at: Date.now(), ...(await build()) }
    cache.set(key, entry)
  }
  const json = wantsJson(c)
  return c.body(json ? entry.body : entry.html, 200, {
    'content-type': json ? 'application/json' : 'text/html; charset=utf-8',
    'cache-control': 'public, max-age=60',
    vary: 'Accept',
  })
}

const FormatQuery = z.object({
  format: z.enum(['json', 'html']).optional().openapi({ description: 'json: the machine-readable document' }),
})

export function trustPageRoutes(app: OpenAPIHono<FamilyEnv<PlatformEnv>>): void {
  const routes: {
    path: string
    operationId: string
    summary: string
    /** What makes the page unavailable (503), for a page built from stored state. */
    unavailable?: string
    build: (env: PlatformEnv) => Promise<{ body: string; html: string }>
  }[] = [
    {
      path: '/trust/conformance',
      operationId: 'getConformanceEvidence',
      summary: "Conformance evidence: vector sets passed and this deployment's runtime self-tests (public)",
      unavailable:
        'audit_log_unavailable: the self-test evidence (kept by the audit log) cannot be read; retry shortly',
      build: async (env: PlatformEnv) => {
        const doc = await conformanceDocument(env)
        return { body: JSON.stringify(doc), html: conformanceHtml(doc) }
      },
    },
    {
      path: '/trust/entropy',
      operationId: 'getEntropyChain',
      summary: 'The entropy chain: from the runtime CSPRNG to every key, secret and nonce (public)',
      build: async () => {
        const doc = entropyDocument()
        return { body: JSON.stringify(doc), html: entropyHtml(doc) }
      },
    },
  ]
  for (const route of routes) {
    app.openAPIRegistry.registerPath(
      createRoute({
        method: 'get',
        path: route.path,
        operationId: route.operationId,
        tags: ['Trust'],
        summary: route.summary,
        request: { query: FormatQuery },
        responses: {
          200: {
            description: 'HTML by default; JSON with Accept: application/json or ?format=json',
            content: {
              'text/html': { schema: z.string() },
              'application/json': { schema: z.record(z.string(), z.unknown()) },
            },
          },
          ...(route.unavailable ? { 503: errorResponse(route.unavailable) } : {}),
        },
      }),
    )
    app.get(route.path, (c) => serve(c, route.path, () => route.build(c.env)))
  }
}
