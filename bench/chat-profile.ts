/**
 * Where the CPU goes on a chat completion: the product as scripts/stack.ts runs it (same bundles,
 * same bindings, same database setup), with the V8 inspector on, under wrk load against the
 * benchmark's mock upstream, sampling the gateway and the chat worker (which also runs the
 * RateLimiter object). Prints self and inclusive time per function, per worker.
 *
 *   node bench/chat-mock-upstream.mjs 18080 &
 *   npx tsx bench/chat-profile.ts [seconds=8] [connections=8]
 *   PROFILE_GET='/platform/v1/crypto/algorithms?type=kem' npx tsx bench/chat-profile.ts   (a GET instead)
 *
 * The profiler's own overhead inflates every figure; compare functions, not absolute times.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { convertV4MiniflareOptions, type LegacyWorkerOptions, Log, LogLevel, Miniflare } from 'miniflare'
import { unstable_getMiniflareWorkerOptions, unstable_readConfig } from 'wrangler'
import WebSocket from 'ws'
import { startEmbeddedPostgres } from '../scripts/db/embedded-postgres.ts'
import { runMigrations } from '../scripts/db/migrate.ts'
import { seedDevelopment } from '../scripts/db/seed.ts'
import { startWsBridge } from '../scripts/db/ws-bridge.ts'
import { bundleWorker, ROOT, workerConfigPaths } from '../scripts/workers.ts'
import { PLAN_CATALOG_CONFIG } from '../shared/plans/plan-catalog.ts'

const seconds = Number(process.argv[2] ?? 8)
const connections = Number(process.argv[3] ?? 8)
const PORT = 18790
const INSPECTOR = 9230
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-chat-profile-'))

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
}
interface ProfileNode {
  id: number
  callFrame: CallFrame
  children?: number[]
}
interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

const bindings = {
  MODEL_PROVIDERS: JSON.stringify({
    version: 1,
    providers: [
      {
        id: 'mock',
        kind: 'openai-compatible',
        baseUrl: 'http://127.0.0.1:18080/v1',
        models: { 'svc-cell': 'gpt-4o-mini' },
      },
    ],
  }),
  PLAN_CATALOG: JSON.stringify({
    ...PLAN_CATALOG_CONFIG,
    plans: PLAN_CATALOG_CONFIG.plans.map((p) => ({
      ...p,
      requestsPerMinute: 1_000_000_000,
      tokensPerMinute: 1_000_000_000_000,
      monthlyTokenAllowance: p.monthlyTokenAllowance === null ? null : 1_000_000_000_000,
    })),
  }),
}

const pg = await startEmbeddedPostgres({ dataDir: path.join(dataDir, 'pglite') })
const bridge = await startWsBridge({ target: { host: pg.host, port: pg.port } })
const dbEnv = { DATABASE_URL: pg.connectionString, DATABASE_WS_PROXY: bridge.url }
await runMigrations(dbEnv)
const credentials = await seedDevelopment(dbEnv, dataDir)
const workers: LegacyWorkerOptions[] = []
for (const configPath of workerConfigPaths()) {
  const config = unstable_readConfig({ config: path.join(ROOT, configPath) })
  const { workerOptions, main } = unstable_getMiniflareWorkerOptions(config)
  const name = config.name ?? configPath
  const outfile = path.join(dataDir, 'build', name, 'index.js')
  await bundleWorker(main ?? '', outfile)
  workers.push({
    ...workerOptions,
    name,
    modules: true,
    scriptPath: outfile,
    modulesRoot: path.dirname(outfile),
    modulesRules: undefined,
    rootPath: undefined,
    bindings: { ...(workerOptions.bindings as Record<string, unknown>), ...dbEnv, ...bindings },
  } as LegacyWorkerOptions)
}
const gatewayIndex = workers.findIndex((w) => w.name === 'svc-gateway')
const [gateway] = workers.splice(gatewayIndex, 1)
const miniflare = new Miniflare(
  convertV4MiniflareOptions({
    host: '127.0.0.1',
    port: PORT,
    inspectorPort: INSPECTOR,
    log: new Log(LogLevel.WARN),
    defaultPersistRoot: path.join(dataDir, 'miniflare'),
    cf: false,
    workers: [gateway!, ...workers],
  }),
)
await miniflare.ready

/** PROFILE_GET=<path>: profile GETs of that path with the live key instead of chat completions. */
const getPath = process.env.PROFILE_GET
const wrk = (duration: number) =>
  new Promise<void>((resolve) => {
    const child = spawn(
      'wrk',
      getPath
        ? [
            `-t1`,
            `-c${connections}`,
            `-d${duration}s`,
            '-H',
            `authorization: Bearer ${credentials.liveKey}`,
            `http://127.0.0.1:${PORT}${getPath}`,
          ]
        : [
            `-t1`,
            `-c${connections}`,
            `-d${duration}s`,
            '-s',
            path.join(ROOT, 'bench/chat-wrk-post.lua'),
            `http://127.0.0.1:${PORT}/svc/chat/completions`,
          ],
      {
        env: { ...process.env, HDRS: `authorization: Bearer ${credentials.liveKey}`, MODEL: 'svc-cell' },
        stdio: 'inherit',
      },
    )
    child.on('exit', () => resolve())
  })

const targets = (await (await fetch(`http://127.0.0.1:${INSPECTOR}/json`)).json()) as {
  title: string
  webSocketDebuggerUrl: string
}[]
const sessions: {
  title: string
  send: (method: string, params?: object) => Promise<{ result?: { profile?: Profile } }>
}[] = []
for (const target of targets.filter((t) =>
  /core:user:svc-(gateway|chat)$/.test(t.title.split(' ').pop() ?? ''),
)) {
  const ws = new WebSocket(target.webSocketDebuggerUrl)
  await new Promise((resolve) => ws.on('open', resolve))
  let id = 0
  const pending = new Map<number, (message: { result?: { profile?: Profile } }) => void>()
  ws.on('message', (raw) => {
    const message = JSON.parse(raw.toString()) as { id?: number; result?: { profile?: Profile } }
    if (message.id !== undefined) pending.get(message.id)?.(message)
  })
  sessions.push({
    title: target.title,
    send: (method, params = {}) =>
      new Promise((resolve) => {
        id += 1
        pending.set(id, resolve)
        ws.send(JSON.stringify({ id, method, params }))
      }),
  })
}

await wrk(5)
for (const s of sessions) {
  await s.send('Profiler.enable')
  await s.send('Profiler.setSamplingInterval', { interval: 100 })
  await s.send('Profiler.start')
}
await wrk(seconds)

const label = (frame: CallFrame) =>
  `${frame.functionName || '(anonymous)'} ${frame.url.split('/').pop() ?? ''}:${frame.lineNumber + 1}`
for (const s of sessions) {
  const profile = (await s.send('Profiler.stop')).result?.profile
  if (!profile) continue
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const self = new Map<string, number>()
  const inclusive = new Map<string, number>()
  profile.samples.forEach((sample, i) => {
    const dt = profile.timeDeltas[i] ?? 0
    const leaf = byId.get(sample)
    if (!leaf) return
    self.set(label(leaf.callFrame), (self.get(label(leaf.callFrame)) ?? 0) + dt)
    const seen = new Set<string>()
    for (let id: number | undefined = sample; id !== undefined; id = parent.get(id)) {
      const key = label(byId.get(id)!.callFrame)
      if (seen.has(key)) continue
      seen.add(key)
      inclusive.set(key, (inclusive.get(key) ?? 0) + dt)
    }
  })
  const top = (map: Map<string, number>, n: number) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `${(v / 1000).toFixed(1).padStart(9)} ms  ${k}`)
  console.log(
    `\n=== ${s.title}\n-- self\n${top(self, 25).join('\n')}\n-- inclusive\n${top(inclusive, 40).join('\n')}`,
  )
}

await miniflare.dispose()
await bridge.close()
await pg.close()
rmSync(dataDir, { recursive: true, force: true })
process.exit(0)
