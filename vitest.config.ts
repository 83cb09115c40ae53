import path from 'node:path'
import { cloudflareTest } from '@cloudflare/vitest-plugin'
import { ml_dsa44, ml_dsa65 } from '@noble/post-quantum/ml-dsa.js'
import { defineConfig, type Plugin } from 'vitest/config'
import { bundleBrowserScript, bundleWorker, workerBundleCache } from './scripts/workers.ts'
import { longestFirstSequencer } from './test/support/sequencer.ts'

/**
 * The flags every worker's wrangler config sets: `webcrypto_modern_algorithms` gives WebCrypto
 * ML-DSA and ML-KEM (shared/crypto/post-quantum.ts). The unit-noble project leaves it out to test
 * the JavaScript fallback.
 */
const COMPATIBILITY_FLAGS = ['nodejs_compat', 'webcrypto_modern_algorithms']

/** A fresh private JWK in the JWT_SIGNING_KEYS format, for the Durable Object test projects. */
async function testPrivateJwk(alg: 'EdDSA' | 'ML-DSA-44' | 'ML-DSA-65'): Promise<JsonWebKey | object> {
  const b64url = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url')
  if (alg === 'EdDSA') {
    const pair = (await crypto.subtle.generateKey('Ed25519', true, ['sign', 'verify'])) as CryptoKeyPair
    const { kty, crv, x, d } = await crypto.subtle.exportKey('jwk', pair.privateKey)
    return { kty, crv, x, d, alg }
  }
  const seed = crypto.getRandomValues(new Uint8Array(32))
  const { publicKey } = (alg === 'ML-DSA-44' ? ml_dsa44 : ml_dsa65).keygen(seed)
  return { kty: 'AKP', alg, pub: b64url(publicKey), priv: b64url(seed) }
}

/**
 * `import js from './x.client?script'` in tests inside workerd: the browser script bundled as the
 * workers' build bundles it (scripts/workers.ts), as a string module. The console serves its
 * client script so; the route-ownership and OpenAPI tests load the console worker.
 */
const browserScriptText: Plugin = {
  name: 'browser-script-text',
  enforce: 'pre',
  resolveId(id, importer) {
    if (!id.endsWith('?script') || !importer) return null
    return `${path.resolve(path.dirname(importer), id.slice(0, -'?script'.length))}.ts?browser-script`
  },
  async load(id) {
    if (!id.endsWith('?browser-script')) return null
    const script = await bundleBrowserScript(id.slice(0, -'?browser-script'.length))
    return `export default ${JSON.stringify(script.text)}`
  },
}

/**
 * How the suite is scheduled. Groups run one after another; the files of a group side by side, at
 * most `maxWorkers` at once (vitest's `sequence.groupOrder`):
 * 1. unit, unit-db, do-*, scripts, fakes: CPU-bound, as many at once as there are cores (two on
 *    CI); with them the few e2e files that must not run beside other e2e files (E2E_APART).
 * 2. every other e2e file (e2e-pglite, e2e-postgres). The files on the shared stacks mostly wait
 *    on them, each in workspaces of its own (fileStack(), test/e2e/file-stack.ts); the files that
 *    start stacks of their own keep a core busy while a stack starts, and fill those waits.
 * Every project takes one of these: a project without one would run after both, one file at a time.
 */
const UNIT_GROUP = { sequence: { groupOrder: 1 }, maxWorkers: 2 }
const E2E_GROUP = { sequence: { groupOrder: 2 }, maxWorkers: 5 }

/**
 * End-to-end files that run in group 1 (e2e-apart-pglite, e2e-apart-postgres), apart from the
 * other e2e files, and why.
 */
const E2E_APART: Record<string, string> = {
  // Files that flip a shared fake's global switches (`/fail`, `/reset`) and count every request it
  // received; other files reach these fakes with live keys (MCP tools, the console).
  documents: "the embeddings fake's switches",
  search: "the search providers' fake's switches",
  transcribe: "the speech fake's switches",
  // Embedded Postgres replaced after a hostile statement, raced against 2 s and 4 s deadlines: it
  // needs a core, which five e2e files starting stacks beside it would not leave it.
  'database-resilience': 'restarts of embedded Postgres against deadlines of seconds',
}

/**
 * Every end-to-end file runs on embedded PGlite, the database `npm start` uses by default. These
 * also run on the PostgreSQL server, because their behaviour depends on the database (README,
 * "Which tests run where"); the rest run the same code over the same SQL on either database.
 * crash-workerd and reasoning-qpu-restart are not here: what they add to crash and
 * reasoning-crash (another runtime; a job whose state is in its object and its message in the
 * queue) does not depend on the database.
 */
const E2E_ON_POSTGRES: Record<string, string> = {
  crash: 'what the database keeps when npm start is killed',
  restart: 'what the database keeps across a restart (the development seed re-used)',
  'reasoning-crash': 'jobs acknowledged before a kill, in the database after it',
  'telemetry-crash': 'ingestions acknowledged before a kill, in the database after it',
  'database-resilience':
    'statement_timeout ends a hostile statement on the server, the client deadline on PGlite',
  documents: 'pgvector on PGlite, the exact scan on the server; the allowance under 32 concurrent uploads',
  identity: 'two concurrent refreshes of one token: a race the server runs and PGlite serialises',
  'revocation-fuzz': 'concurrent refreshes of login and OAuth token families, the same kind of race',
  reasoning: '32 concurrent creates with one Idempotency-Key under an advisory lock',
  'chat-plans': "the usage ledger's replayed flushes and the balance they move",
  'input-rules': 'deep JSON, surrogate pairs and escaped NUL stored and read back',
  'workspace-cli': "the CLI reaches the database through the running stack's record",
}

const e2eFiles = (names: readonly string[]) => names.map((name) => `test/e2e/${name}.e2e.test.ts`)

/**
 * The files to start first in their group, longest first (minutes on the 2-core machine), so that
 * no group ends waiting on one long file started last (test/support/sequencer.ts).
 */
const LONG_FIRST = e2eFiles([
  'audit-tamper',
  'crash',
  'crash-workerd',
  'console',
  'deploy',
  'reasoning-qpu-restart',
  'telemetry-crash',
  'restart',
  'key-limits-crash',
  'mcp-conformance',
  'reasoning-crash',
  'input-fuzz',
  'telemetry',
  'database-resilience',
  'agent-unconfigured',
  'agent',
])

function e2eProjects() {
  const project = (name: string, kind: 'pglite' | 'postgres', include: string[], exclude: string[] = []) => ({
    test: {
      name,
      include,
      exclude,
      environment: 'node',
      // The stack of `kind`: one per kind for the whole run, whichever projects use it.
      globalSetup: [`test/e2e/${kind}.setup.ts`],
      // A test that hangs still fails; one that is slow because CI runs the whole suite on two
      // cores (30 s was exceeded there by 30 cut-connection replays and the mode fuzz) does not.
      testTimeout: 60_000,
      hookTimeout: 120_000,
      ...(name.startsWith('e2e-apart-') ? UNIT_GROUP : E2E_GROUP),
    },
  })
  const onPostgres = Object.keys(E2E_ON_POSTGRES)
  const apart = Object.keys(E2E_APART)
  const isApart = (f: string) => apart.includes(f)
  return [
    project('e2e-pglite', 'pglite', ['test/e2e/**/*.e2e.test.ts'], e2eFiles(apart)),
    project('e2e-postgres', 'postgres', e2eFiles(onPostgres.filter((f) => !isApart(f)))),
    project('e2e-apart-pglite', 'pglite', e2eFiles(apart)),
    project('e2e-apart-postgres', 'postgres', e2eFiles(onPostgres.filter(isApart))),
  ]
}

/**
 * Four kinds of tests:
 * - unit: colocated `*.test.ts` files run inside workerd (Cloudflare's vitest integration),
 *   so they see the same runtime as production code.
 * - unit-db: colocated `*.db.test.ts` files, inside workerd like unit tests, with a throw-away
 *   Postgres (in-memory PGlite behind the WebSocket bridge, test/support/unit-database.ts) bound
 *   as DATABASE_URL: family routes and shared code whose behaviour is in their queries.
 * - do-<worker>: Durable Objects inside the worker that hosts them (its wrangler config), so
 *   alarms, storage and RPC are the real ones; tests drive alarms with runDurableObjectAlarm.
 *   do-metering hosts the RateLimiter; do-chat and do-code run their worker with the metering
 *   worker beside it, as deployed.
 * - e2e: `test/e2e/**` start the whole stack the way README says (`npm start`) and call it over
 *   HTTP with real clients, on embedded PGlite and (what depends on the database) on the real
 *   PostgreSQL server.
 */
export default defineConfig(async () => {
  // The chat and code workers bind the RateLimiter that the metering worker hosts
  // (script_name = "svc-metering"), so their Durable Object tests run with the real metering
  // worker beside them.
  const cache = await workerBundleCache()
  const meteringBundle = path.resolve('.data/vitest-aux/svc-metering/index.js')
  await bundleWorker(path.resolve('functions/metering/src/index.ts'), meteringBundle, { cache })
  const meteringWorker = {
    name: 'svc-metering',
    modules: true,
    scriptPath: meteringBundle,
    compatibilityDate: '2026-10-01',
    compatibilityFlags: COMPATIBILITY_FLAGS,
    durableObjects: { RATE_LIMITER: { className: 'RateLimiter', useSQLite: true } },
  }
  // The chat worker's tests read the ledger rows their requests left through a subclass of the
  // RateLimiter with one read-only method (test/support/metering-test-worker.ts); the product's
  // class has no test-only methods.
  const meteringTestBundle = path.resolve('.data/vitest-aux/svc-metering-test/index.js')
  await bundleWorker(path.resolve('test/support/metering-test-worker.ts'), meteringTestBundle, { cache })
  // The platform worker hosts the AuditLog object and binds the auth worker (attestation signing).
  const authBundle = path.resolve('.data/vitest-aux/svc-auth/index.js')
  const platformBundle = path.resolve('.data/vitest-aux/svc-platform/index.js')
  await bundleWorker(path.resolve('functions/platform/src/index.ts'), platformBundle, { cache })
  await bundleWorker(path.resolve('functions/auth/src/index.ts'), authBundle, { cache })
  // The code worker hosts the AgentRun objects the platform worker binds (the admin cancel).
  const codeBundle = path.resolve('.data/vitest-aux/svc-code/index.js')
  await bundleWorker(path.resolve('functions/code/src/index.ts'), codeBundle, { cache })
  /** The code worker beside a test worker, its runs indexed in `database` and metered beside it. */
  const codeWorker = (database: Record<string, string>) => ({
    name: 'svc-code',
    modules: true,
    scriptPath: codeBundle,
    compatibilityDate: '2026-10-01',
    compatibilityFlags: COMPATIBILITY_FLAGS,
    bindings: database,
    durableObjects: {
      AGENT_RUN: { className: 'AgentRun', useSQLite: true },
      RATE_LIMITER: { className: 'RateLimiter', scriptName: 'svc-metering' },
    },
  })
  const keys = async (algs: readonly ('EdDSA' | 'ML-DSA-44' | 'ML-DSA-65')[]) =>
    JSON.stringify(await Promise.all(algs.map(testPrivateJwk)))
  const logSigningKeys = await keys(['EdDSA', 'ML-DSA-44'])
  const tokenSigningKeys = await keys(['ML-DSA-65', 'EdDSA'])
  const contentKeks = JSON.stringify([
    { kid: 'test-kek-1', key: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url') },
  ])

  return {
    test: {
      sequence: { sequencer: longestFirstSequencer(LONG_FIRST) },
      projects: [
        {
          plugins: [
            browserScriptText,
            cloudflareTest({
              miniflare: {
                compatibilityDate: '2026-10-01',
                compatibilityFlags: COMPATIBILITY_FLAGS,
              },
            }),
          ],
          test: {
            name: 'unit',
            ...UNIT_GROUP,
            include: [
              'shared/**/*.test.ts',
              'functions/**/*.test.ts',
              'durable-objects/**/*.test.ts',
              'test/unit/**/*.test.ts',
            ],
            exclude: ['**/*.do.test.ts', '**/*.db.test.ts', '**/*.noble.test.ts', '**/node_modules/**'],
          },
        },
        {
          // The same runtime without webcrypto_modern_algorithms: post-quantum crypto falls back to
          // @noble/post-quantum, and `*.noble.test.ts` check that it does, end to end.
          plugins: [
            cloudflareTest({
              miniflare: { compatibilityDate: '2026-10-01', compatibilityFlags: ['nodejs_compat'] },
            }),
          ],
          test: { name: 'unit-noble', ...UNIT_GROUP, include: ['shared/**/*.noble.test.ts'] },
        },
        {
          plugins: [
            cloudflareTest(({ inject }) => ({
              miniflare: {
                compatibilityDate: '2026-10-01',
                compatibilityFlags: COMPATIBILITY_FLAGS,
                bindings: { ...inject('unitDatabase') },
                // Families record security events in the audit logs the platform worker hosts; the
                // platform's agent-run routes reach the runs of the code worker.
                durableObjects: {
                  AUDIT_LOG: { className: 'AuditLog', scriptName: 'svc-platform' },
                  AGENT_RUN: { className: 'AgentRun', scriptName: 'svc-code' },
                },
                workers: [
                  codeWorker(inject('unitDatabase') as Record<string, string>),
                  { ...meteringWorker, bindings: { ...inject('unitDatabase') } as Record<string, string> },
                  {
                    name: 'svc-platform',
                    modules: true,
                    scriptPath: platformBundle,
                    compatibilityDate: '2026-10-01',
                    compatibilityFlags: COMPATIBILITY_FLAGS,
                    bindings: { LOG_SIGNING_KEYS: logSigningKeys },
                    durableObjects: { AUDIT_LOG: { className: 'AuditLog', useSQLite: true } },
                  },
                ],
              },
            })),
          ],
          test: {
            name: 'unit-db',
            ...UNIT_GROUP,
            include: ['shared/**/*.db.test.ts', 'functions/**/*.db.test.ts'],
            globalSetup: ['test/support/unit-database.setup.ts'],
          },
        },
        {
          plugins: [cloudflareTest({ wrangler: { configPath: 'functions/metering/wrangler.toml' } })],
          test: {
            name: 'do-metering',
            ...UNIT_GROUP,
            include: ['durable-objects/rate-limiter/**/*.do.test.ts'],
            passWithNoTests: true,
          },
        },
        {
          plugins: [
            cloudflareTest({
              wrangler: { configPath: 'functions/chat/wrangler.toml' },
              miniflare: { workers: [{ ...meteringWorker, scriptPath: meteringTestBundle }] },
            }),
          ],
          test: {
            name: 'do-chat',
            ...UNIT_GROUP,
            include: ['functions/chat/**/*.do.test.ts'],
            passWithNoTests: true,
          },
        },
        {
          // Runs are indexed in Postgres (the unit database).
          plugins: [
            cloudflareTest(({ inject }) => ({
              wrangler: { configPath: 'functions/code/wrangler.toml' },
              miniflare: { bindings: { ...inject('unitDatabase') }, workers: [meteringWorker] },
            })),
          ],
          test: {
            name: 'do-code',
            ...UNIT_GROUP,
            include: ['durable-objects/agent-run/**/*.do.test.ts', 'functions/code/**/*.do.test.ts'],
            globalSetup: ['test/support/unit-database.setup.ts'],
            passWithNoTests: true,
          },
        },
        {
          // The reasoning worker hosts ReasoningJob and ReasoningRunQueue; jobs are indexed in Postgres (the unit
          // database), call the fake IonQ provider (its own process), metered by the RateLimiter of the metering worker and audited in the
          // AuditLog objects of the platform worker, both beside it.
          plugins: [
            cloudflareTest(({ inject }) => ({
              wrangler: { configPath: 'functions/reasoning/wrangler.toml' },
              miniflare: {
                bindings: { ...inject('unitDatabase'), CONTENT_KEKS: contentKeks },
                workers: [
                  { ...meteringWorker, bindings: { ...inject('unitDatabase') } as Record<string, string> },
                  {
                    name: 'svc-platform',
                    modules: true,
                    scriptPath: platformBundle,
                    compatibilityDate: '2026-10-01',
                    compatibilityFlags: COMPATIBILITY_FLAGS,
                    bindings: { LOG_SIGNING_KEYS: logSigningKeys } as Record<string, string>,
                    durableObjects: { AUDIT_LOG: { className: 'AuditLog', useSQLite: true } },
                  },
                  {
                    // Signs inference receipts with the token keys.
                    name: 'svc-auth',
                    modules: true,
                    scriptPath: authBundle,
                    compatibilityDate: '2026-10-01',
                    compatibilityFlags: COMPATIBILITY_FLAGS,
                    bindings: { JWT_SIGNING_KEYS: tokenSigningKeys },
                  },
                ],
              },
            })),
          ],
          test: {
            name: 'do-reasoning',
            ...UNIT_GROUP,
            include: [
              'durable-objects/reasoning-job/**/*.do.test.ts',
              'durable-objects/reasoning-run-queue/**/*.do.test.ts',
              'functions/reasoning/**/*.do.test.ts',
            ],
            // The QPU path talks to the fake IonQ provider over HTTP, as in production.
            globalSetup: ['test/support/unit-database.setup.ts', 'test/support/ionq-provider.setup.ts'],
            passWithNoTests: true,
          },
        },
        {
          plugins: [
            cloudflareTest({
              wrangler: { configPath: 'functions/platform/wrangler.toml' },
              miniflare: {
                bindings: { LOG_SIGNING_KEYS: logSigningKeys },
                // The wrangler config binds the AgentRun objects of the code worker.
                workers: [
                  codeWorker({}),
                  meteringWorker,
                  {
                    name: 'svc-auth',
                    modules: true,
                    scriptPath: authBundle,
                    compatibilityDate: '2026-10-01',
                    compatibilityFlags: COMPATIBILITY_FLAGS,
                    bindings: { JWT_SIGNING_KEYS: tokenSigningKeys },
                  },
                ],
              },
            }),
          ],
          test: {
            name: 'do-platform',
            ...UNIT_GROUP,
            include: [
              'durable-objects/audit-log/**/*.do.test.ts',
              // Gateway enforcement appends to the AuditLog objects this worker hosts.
              'functions/gateway/src/crypto-enforcement.do.test.ts',
            ],
            passWithNoTests: true,
          },
        },
        {
          test: {
            name: 'scripts',
            ...UNIT_GROUP,
            include: ['scripts/**/*.test.ts'],
            environment: 'node',
          },
        },
        {
          // Node-side tests of the local fakes of outside providers, and of the product's adapters
          // against them over real HTTP (the QPU provider: test/fakes/ionq-provider.ts).
          test: {
            name: 'fakes',
            ...UNIT_GROUP,
            include: ['test/fakes/**/*.test.ts'],
            environment: 'node',
          },
        },
        ...e2eProjects(),
      ],
    },
  }
})
