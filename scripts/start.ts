/**
 * `npm start`: the whole product locally on its embedded defaults. See README for the
 * configuration table (PORT, HOST, DATA_DIR, DATABASE_URL, ...).
 *
 * `npm start -- --runtime=workerd` runs the workers on plain `workerd serve` (as in production,
 * and as the benchmarks do) instead of through Miniflare; see scripts/stack.ts.
 *
 * `npm start -- --fake-qpu` also starts the local IonQ v0.3 fake (test/fakes/ionq-provider.ts) and
 * makes it the managed QPU account, so `managed_qpu` jobs go the whole way (queue, provider,
 * result) without an IonQ account; docs/quantum-selector.md.
 */
import path from 'node:path'
import { parseArgs } from 'node:util'
import { type StackRuntime, startStack } from './stack.ts'
import { ROOT } from './workers.ts'

const host = process.env.HOST ?? '127.0.0.1'
const port = Number(process.env.PORT ?? 8787)
const dataDir = path.resolve(ROOT, process.env.DATA_DIR ?? '.data')
const databaseUrl = process.env.DATABASE_URL || undefined
const { values: args } = parseArgs({
  options: {
    runtime: { type: 'string', default: 'miniflare' },
    'fake-qpu': { type: 'boolean', default: false },
  },
})
if (args.runtime !== 'miniflare' && args.runtime !== 'workerd') {
  console.error(`--runtime must be miniflare or workerd, not ${args.runtime}`)
  process.exit(2)
}
const runtime: StackRuntime = args.runtime

// Configuration read by the workers (see README): passed from the environment to every worker.
const WORKER_CONFIG =
  /^(MODEL_PROVIDERS|EMBEDDINGS_|PROVIDER_|SEARCH_|STT_|OPENAI_|BRAVE_|TAVILY_|SEARXNG_|GROQ_|WORKERS_AI_|QPU_|REASONING_|OTLP_|AUTH_|JWT_|LOG_SIGNING_KEYS$|AUDIT_|CRYPTO_|PLAN_|RATE_LIMIT_|AGENT_|API_KEY_CACHE_TTL_SECONDS$|DATABASE_STATEMENT_TIMEOUT_MS$|PUBLIC_BASE_URL$|CORS_ALLOWED_ORIGINS$|MCP_|OAUTH_|CONSOLE_)/
const passThrough = Object.fromEntries(
  Object.entries(process.env).filter(([k, v]) => v !== undefined && WORKER_CONFIG.test(k)),
) as Record<string, string>

// The fake QPU provider, when asked for (and only then loaded: its simulator, quantum-circuit,
// takes a while to load); its key is a local development value, not a secret.
const FAKE_QPU_KEY = 'ionq-local-development-key'
const fakeQpu = args['fake-qpu']
  ? await (await import('../test/fakes/ionq-provider.ts')).startFakeIonq({
      keys: { [FAKE_QPU_KEY]: { qpu: true } },
      port: Number(process.env.QPU_FAKE_PORT ?? 0),
    })
  : null
if (fakeQpu) {
  passThrough.QPU_IONQ_BASE_URL ??= fakeQpu.baseUrl
  passThrough.QPU_IONQ_API_KEY ??= FAKE_QPU_KEY
}

// On a loopback address the MCP endpoint answers only requests addressed to a loopback name: a web
// page whose DNS name was rebound to 127.0.0.1 cannot drive it (see README, MCP_ALLOWED_HOSTS).
if (passThrough.MCP_ALLOWED_HOSTS === undefined && ['127.0.0.1', 'localhost', '::1'].includes(host)) {
  passThrough.MCP_ALLOWED_HOSTS = 'localhost,127.0.0.1,[::1]'
}

/** A folder as the banner names it: relative to the checkout when inside it. */
const shown = (dir: string) => {
  const relative = path.relative(ROOT, dir)
  return relative.startsWith('..') || path.isAbsolute(relative) ? dir : relative
}

const started = Date.now()
const stack = await startStack({ host, port, dataDir, databaseUrl, bindings: passThrough, runtime })
const { credentials } = stack

console.log(`
svc is running (${((Date.now() - started) / 1000).toFixed(1)} s)

  Base URL        ${stack.baseUrl}
  Runtime         ${runtime === 'workerd' ? 'workerd (plain workerd serve)' : 'Miniflare'}${fakeQpu ? `\n  QPU provider    fake IonQ v0.3 at ${fakeQpu.baseUrl} (key ${FAKE_QPU_KEY})` : ''}
  Database        ${stack.database.kind === 'embedded' ? `embedded PGlite (${path.relative(ROOT, dataDir) || '.'}/pglite)` : 'DATABASE_URL'}
  Telemetry       ${stack.telemetry.collector === 'local' ? `local OTLP collector, files in ${shown(stack.telemetry.dir)}/{traces,metrics,logs}.jsonl` : 'OTLP_COLLECTOR_URL'}
  Workspace       ${credentials.tenantName} (${credentials.tenantId})
  Test API key    ${credentials.testKey}
  Live API key    ${credentials.liveKey}
  Owner login     ${credentials.ownerEmail} / ${credentials.ownerPassword}
  Service account ${credentials.serviceAccountId} / ${credentials.serviceAccountSecret}

  curl ${stack.baseUrl}/svc/models
  curl -H "Authorization: Bearer ${credentials.testKey}" ${stack.baseUrl}/svc/memories
  curl -H 'content-type: application/json' -d '{"email":"${credentials.ownerEmail}","password":"${credentials.ownerPassword}"}' ${stack.baseUrl}/auth/login

Press Ctrl+C to stop. Data persists in ${dataDir}.
`)

let stopping = false
async function shutdown(): Promise<void> {
  if (stopping) return
  stopping = true
  await stack.stop()
  await fakeQpu?.stop()
  process.exit(0)
}
process.on('SIGINT', shutdown)
process.on('SIGTERM', shutdown)
