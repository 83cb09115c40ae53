/**
 * What counting tokens costs an isolate, both ways: gpt-tokenizer (what shared/providers/
 * tokenizer.ts counted with until issue 28) and shared/providers/tokenizer-o200k.ts (what it
 * counts with now). For each, a worker whose only work is counting runs alone in workerd
 * (Miniflare, with the V8 inspector): its bundle's size; the isolate's live heap (after a heap
 * snapshot's full GC) once loaded, after the first count and after 6n more; the first count's time (the rank
 * table built) and a warm count of a ~2,000-token prompt (a request counting 2n times minus one
 * counting n times, over n: workerd's clock stands still while a request computes). Then the same
 * in Node (`--expose-gc`, a child process each): heap used, memory outside the heap, times, and
 * the CPU time of counting 40 different prompts of that size.
 *
 *   npx tsx bench/tokenizer.ts          # N=20 (counts per timed request), PORT=0 (and PORT+1)
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { build } from 'esbuild'
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from 'miniflare'
import WebSocket from 'ws'
import { countTokens } from '../shared/providers/tokenizer-o200k.ts'
import { median, round } from './bench-support.ts'

const N = Number(process.env.N ?? 20)
const PORT = Number(process.env.PORT ?? 0)
const ROOT = path.resolve(import.meta.dirname, '..')
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8')
/** ~2,000 tokens of prose, tables and code: the start of the README. */
const PROMPT = README.slice(0, 8_000)
/** 40 prompts like it (slices 1,000 characters apart), so that no cache holds all of one. */
const VARIED = Array.from({ length: 40 }, (_, i) => README.slice(i * 1_000, i * 1_000 + 8_000))

const IMPLEMENTATIONS = {
  'gpt-tokenizer': `import { countTokens as count } from 'gpt-tokenizer/encoding/o200k_base'
const plain = { disallowedSpecial: new Set() }
const countTokens = (text) => count(text, plain)`,
  'tokenizer-o200k': `import { countTokens } from './shared/providers/tokenizer-o200k.ts'`,
} as const
type Implementation = keyof typeof IMPLEMENTATIONS

/** The worker (and the module the Node child imports: it exports countTokens). */
const WORKER = (impl: Implementation) => `${IMPLEMENTATIONS[impl]}
export { countTokens }
export default {
  async fetch(request) {
    const url = new URL(request.url)
    if (url.pathname === '/noop') return new Response('{}')
    const text = await request.text()
    let tokens = 0
    for (let i = Number(url.searchParams.get('n') ?? 1); i > 0; i--) tokens = countTokens(text)
    return Response.json({ tokens })
  },
}`

const NODE_CHILD = `const [file, prompt, variedFile, n] = [process.argv[1], process.argv[2], process.argv[3], Number(process.argv[4])]
const { readFileSync } = await import('node:fs')
const text = readFileSync(prompt, 'utf8')
const varied = JSON.parse(readFileSync(variedFile, 'utf8'))
const heap = () => { gc(); gc(); const m = process.memoryUsage(); return { heap: m.heapUsed, outside: m.external } }
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000 }
const before = heap()
let t = performance.now(), c = cpu()
const { countTokens } = await import(file)
const load = { ms: performance.now() - t, cpuMs: cpu() - c }
const loaded = heap()
t = performance.now(); c = cpu()
const tokens = countTokens(text)
const first = { ms: performance.now() - t, cpuMs: cpu() - c }
const counted = heap()
const warm = []
c = cpu()
for (let i = 0; i < n; i++) { t = performance.now(); countTokens(text); warm.push(performance.now() - t) }
const warmCpuMs = (cpu() - c) / n
warm.sort((a, b) => a - b)
c = cpu()
for (let round = 0; round < 5; round++) for (const p of varied) countTokens(p)
const variedCpuMs = (cpu() - c) / (5 * varied.length)
console.log(JSON.stringify({ tokens, before, loaded, counted, after: heap(), load, first, warmMs: warm[warm.length >> 1], warmCpuMs, variedCpuMs }))`

const mib = (bytes: number) => `${round(bytes / 2 ** 20, 2)} MiB`

async function bundle(impl: Implementation, outfile: string): Promise<void> {
  await build({
    stdin: { contents: WORKER(impl), resolveDir: ROOT, loader: 'js', sourcefile: `${impl}.worker.js` },
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2023',
    conditions: ['workerd', 'worker', 'browser', 'import', 'default'],
    mainFields: ['module', 'main'],
    logLevel: 'warning',
  })
}

interface Inspector {
  send: (method: string, params?: object) => Promise<Record<string, number>>
  close: () => void
}

async function inspector(port: number): Promise<Inspector> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as {
    title: string
    webSocketDebuggerUrl: string
  }[]
  const target = targets.find((t) => t.title.endsWith('core:user:bench'))
  if (!target) throw new Error(`no inspector target for the bench worker: ${JSON.stringify(targets)}`)
  const ws = new WebSocket(target.webSocketDebuggerUrl)
  await new Promise((resolve) => ws.on('open', resolve))
  let id = 0
  const pending = new Map<number, (result: Record<string, number>) => void>()
  ws.on('message', (raw) => {
    const message = JSON.parse(raw.toString()) as { id?: number; result?: Record<string, number> }
    if (message.id !== undefined) pending.get(message.id)?.(message.result ?? {})
  })
  return {
    send: (method, params = {}) =>
      new Promise((resolve) => {
        pending.set(++id, resolve)
        ws.send(JSON.stringify({ id, method, params }))
      }),
    close: () => ws.close(),
  }
}

async function inWorkerd(impl: Implementation, script: string, offset: number) {
  const inspectorPort = 19_230 + offset
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      host: '127.0.0.1',
      port: PORT === 0 ? 0 : PORT + offset,
      inspectorPort,
      log: new Log(LogLevel.WARN),
      cf: false,
      workers: [{ name: 'bench', modules: true, script, compatibilityDate: '2026-10-01' }],
    }),
  )
  try {
    const base = (await mf.ready).origin
    const timed = async (route: string, body?: string) => {
      const start = performance.now()
      const res = await fetch(`${base}${route}`, body === undefined ? {} : { method: 'POST', body })
      const json = (await res.json()) as { tokens?: number }
      if (res.status !== 200) throw new Error(`${impl} ${route}: status ${res.status}`)
      return { ms: performance.now() - start, tokens: json.tokens }
    }
    await timed('/noop')
    const v8 = await inspector(inspectorPort)
    await v8.send('HeapProfiler.enable')
    /** Live heap: a heap snapshot collects garbage first (workerd never answers HeapProfiler.collectGarbage). */
    const heap = async () => {
      await v8.send('HeapProfiler.takeHeapSnapshot', { reportProgress: false })
      return v8.send('Runtime.getHeapUsage')
    }
    const loaded = await heap()
    const noop = median([(await timed('/noop')).ms, (await timed('/noop')).ms, (await timed('/noop')).ms])
    const first = await timed('/count?n=1', PROMPT)
    const counted = await heap()
    const medianOf3 = async (n: number) => {
      const samples: number[] = []
      for (let i = 0; i < 3; i++) samples.push((await timed(`/count?n=${n}`, PROMPT)).ms)
      return median(samples)
    }
    const warmMs = ((await medianOf3(2 * N)) - (await medianOf3(N))) / N
    const after = await heap()
    v8.close()
    return { tokens: first.tokens, loaded, counted, after, firstMs: first.ms - noop, warmMs }
  } finally {
    await mf.dispose()
  }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(process.env.DATA_DIR ?? os.tmpdir(), 'svc-bench-tokenizer-'))
  try {
    const promptFile = path.join(dataDir, 'prompt.txt')
    writeFileSync(promptFile, PROMPT)
    const variedFile = path.join(dataDir, 'varied.json')
    writeFileSync(variedFile, JSON.stringify(VARIED))
    console.log(`prompt: ${PROMPT.length} characters, ${countTokens(PROMPT)} tokens; load ${os.loadavg()[0]}`)
    const impls = Object.keys(IMPLEMENTATIONS) as Implementation[]
    for (const [offset, impl] of impls.entries()) {
      const outfile = path.join(dataDir, `${impl}.js`)
      await bundle(impl, outfile)
      const w = await inWorkerd(impl, readFileSync(outfile, 'utf8'), offset)
      const used = (h: Record<string, number>) =>
        `${mib(h.usedSize ?? 0)} heap${h.backingStorageSize === undefined ? '' : ` + ${mib(h.backingStorageSize)} array buffers`}`
      console.log(
        `workerd ${impl}: bundle ${mib(statSync(outfile).size)}; isolate loaded ${used(w.loaded)}, after the first count ${used(w.counted)}, after ${6 * N + 1} counts ${used(w.after)}; first count ${round(w.firstMs, 1)} ms, then ${round(w.warmMs, 2)} ms per count (${w.tokens} tokens)`,
      )
      const node = JSON.parse(
        execFileSync(
          process.execPath,
          [
            '--expose-gc',
            '--input-type=module',
            '-e',
            NODE_CHILD,
            outfile,
            promptFile,
            variedFile,
            String(N),
          ],
          { encoding: 'utf8' },
        ),
      ) as Record<string, { heap: number; outside: number; ms: number; cpuMs: number }> & {
        warmMs: number
        warmCpuMs: number
        variedCpuMs: number
      }
      const delta = (h: { heap: number; outside: number }) =>
        `${mib(h.heap - node.before!.heap)} heap + ${mib(h.outside - node.before!.outside)} outside`
      console.log(
        `node    ${impl}: loaded ${delta(node.loaded!)}, after the first count ${delta(node.counted!)}, after ${N + 1} counts ${delta(node.after!)}; load ${round(node.load!.ms, 1)} ms (cpu ${round(node.load!.cpuMs, 1)}), first count ${round(node.first!.ms, 1)} ms (cpu ${round(node.first!.cpuMs, 1)}), then ${round(node.warmMs, 2)} ms per count (cpu ${round(node.warmCpuMs, 2)}); 40 prompts like it, cpu ${round(node.variedCpuMs, 2)} ms each`,
      )
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
