/**
 * The product for bench/chat-bench.sh, started as `npm start` does (scripts/stack.ts: embedded
 * Postgres, migrations, seed, every worker in one workerd) but on plain `workerd serve` with the
 * generated config, as in production: without Miniflare's entry worker in front of the gateway and
 * its outbound interceptor behind every fetch(), which would add two isolate hops per request.
 * STACK_RUNTIME=miniflare runs it through Miniflare instead, for comparison. Two settings:
 *
 * - MODEL_PROVIDERS: every alias → the benchmark's mock upstream (OpenAI-compatible).
 * - PLAN_CATALOG: the built-in catalog with per-minute limits and the monthly allowance raised
 *   out of the way (a benchmark sends tens of thousands of requests a minute). The full pipeline
 *   still runs on every request: API-key auth, the plan checks, the RateLimiter object's rate and
 *   allowance checks with reservations, metering, the ledger and its batched flush to Postgres.
 *
 * Writes the live key to <dataDir>/bench-key and a live key with per-key limits to
 * <dataDir>/bench-key-limited. Usage:
 *   tsx bench/chat-stack.ts <port> <upstream base url> <dataDir>   start (SIGTERM stops)
 *   tsx bench/chat-stack.ts ledger <dataDir>                       what the ledger holds (stack running)
 */
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { sql } from 'drizzle-orm'
import WebSocket from 'ws'
import { type StackRuntime, startStack } from '../scripts/stack.ts'
import { openDatabase, useWebSocketConstructor } from '../shared/db/client.ts'
import { PLAN_CATALOG_CONFIG } from '../shared/plans/plan-catalog.ts'

const [command = '18790', ...rest] = process.argv.slice(2)
if (command === 'ledger') {
  await printLedger(path.resolve(rest[0] ?? '.data/bench-chat'))
  process.exit(0)
}
const [portArg, upstreamBase = 'http://127.0.0.1:18080/v1', dataDirArg = '.data/bench-chat'] = [
  command,
  ...rest,
]
const dataDir = path.resolve(dataDirArg)

const providers = {
  version: 1,
  providers: [
    {
      id: 'mock',
      kind: 'openai-compatible',
      baseUrl: upstreamBase,
      models: Object.fromEntries(
        ['svc-cell', 'svc-brood', 'svc-comb', 'svc-buzz', 'svc-hive', 'svc-swarm'].map((a) => [
          a,
          'gpt-4o-mini',
        ]),
      ),
    },
  ],
}

const catalog = {
  ...PLAN_CATALOG_CONFIG,
  version: '2026-08-02',
  plans: PLAN_CATALOG_CONFIG.plans.map((plan) => ({
    ...plan,
    requestsPerMinute: 1_000_000_000,
    tokensPerMinute: 1_000_000_000_000,
    monthlyTokenAllowance: plan.monthlyTokenAllowance === null ? null : 1_000_000_000_000,
  })),
}

const runtime: StackRuntime = process.env.STACK_RUNTIME === 'miniflare' ? 'miniflare' : 'workerd'
const stack = await startStack({
  host: '127.0.0.1',
  port: Number(portArg),
  dataDir,
  runtime,
  bindings: { MODEL_PROVIDERS: JSON.stringify(providers), PLAN_CATALOG: JSON.stringify(catalog) },
})
writeFileSync(path.join(dataDir, 'bench-key'), stack.credentials.liveKey)
// A second live key of the same workspace carrying every per-key limit (a model list, a spend
// limit and its own rates, none of them reached during a run): the limits' cost on the hot path is
// this key's figures against the unlimited key's (docs/benchmarks.md, "Per-key limits").
const createLimited = () =>
  fetch(`${stack.baseUrl}/platform/v1/api-keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.credentials.liveKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'bench limited',
      mode: 'live',
      allowed_models: ['svc-cell'],
      spend_limit: { amount_usd: 1_000_000, period: 'total' },
      rate_limit: { requests_per_minute: 100_000_000, tokens_per_minute: 2_000_000_000 },
    }),
  })
let limited = await createLimited()
for (let attempt = 1; limited.status === 503 && attempt < 10; attempt++) {
  await new Promise((resolve) => setTimeout(resolve, 1000))
  limited = await createLimited()
}
if (limited.status !== 201)
  throw new Error(`the limited key was refused: ${limited.status} ${await limited.text()}`)
writeFileSync(path.join(dataDir, 'bench-key-limited'), ((await limited.json()) as { key: string }).key)
writeFileSync(path.join(dataDir, 'bench-tenant'), stack.credentials.tenantId)
console.log(`bench stack ready on ${stack.baseUrl} (${runtime}, tenant ${stack.credentials.tenantId})`)

const stop = async () => {
  await stack.stop()
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)

/** What the ledger holds for the benchmark workspace (run while the stack is up). */
async function printLedger(dir: string): Promise<void> {
  const runtime = JSON.parse(readFileSync(path.join(dir, 'runtime.json'), 'utf8')) as {
    database: { DATABASE_URL: string; DATABASE_WS_PROXY?: string }
  }
  const tenantId = readFileSync(path.join(dir, 'bench-tenant'), 'utf8').trim()
  useWebSocketConstructor(WebSocket)
  const database = openDatabase(runtime.database, { max: 1 })
  const result = await database.db.execute<{ rows: string; tokens: string }>(sql`
    select count(*)::text as rows, coalesce(sum(prompt_tokens + completion_tokens), 0)::text as tokens
    from usage_ledger where tenant_id = ${tenantId}::uuid`)
  console.log(`ledger: ${result.rows[0]?.rows} metered requests, ${result.rows[0]?.tokens} tokens`)
  await database.close()
}
