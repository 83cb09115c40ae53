/**
 * Agent plane benchmark: time to first event of a turn, events per second on a long streamed
 * turn, and resume latency (a reattach from a cursor), against the product started in-process
 * (scripts/stack.ts startStack: gateway -> code worker -> AgentRun object, workerd through
 * Miniflare's own socket). Live turns stream from a local OpenAI-compatible mock upstream that
 * this script starts (every content chunk written on its own, as fast as the socket takes it).
 *
 *   npx tsx bench/agent-turns.ts        # TTFE_TURNS=200 LONG_TURNS=5 LONG_CHUNKS=2000 RESUMES=50
 *
 * Measured per phase:
 * - ttfe (live key): POST a turn -> first NDJSON line (`turn.started`, persisted before it is
 *   written) while the model takes 100 ms to its first byte, and -> the first message.delta;
 *   plus the whole turn with a test key (the simulated model answers in-process, ~16 events).
 * - long turn (live key): LONG_CHUNKS upstream deltas; events/s = durable events received between
 *   the first and the terminal event / that time; upstream deltas/s likewise (the loop joins the
 *   deltas of one network read into one event); CPU of the stack's workerd per event.
 * - resume: the long turn posted again with `cursor` = last seq - 1 (one event to replay) and
 *   with `cursor` = 0 (the whole log); and mid-stream: the connection dropped halfway through a
 *   live turn, then the reattach -> its first event.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { LogLevel } from 'miniflare'
import { NdjsonEventParser } from '../durable-objects/agent-run/agent-events.ts'
import { startStack } from '../scripts/stack.ts'
import { cpuSeconds, descendantsNamed, round } from './bench-support.ts'

const TTFE_TURNS = Number(process.env.TTFE_TURNS ?? 200)
const LONG_TURNS = Number(process.env.LONG_TURNS ?? 5)
const LONG_CHUNKS = Number(process.env.LONG_CHUNKS ?? 2000)
const RESUMES = Number(process.env.RESUMES ?? 50)

/** How the mock streams the next completion. */
const upstream = { chunks: LONG_CHUNKS, delayEveryMs: 0, firstByteDelayMs: 0 }

async function startMockUpstream(): Promise<{ baseUrl: string; close(): Promise<void> }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume()
    req.on('end', async () => {
      if (upstream.firstByteDelayMs > 0)
        await new Promise((resolve) => setTimeout(resolve, upstream.firstByteDelayMs))
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      const base = { id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1, model: 'bench' }
      const send = (chunk: unknown) => res.write(`data: ${JSON.stringify(chunk)}\n\n`)
      send({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] })
      for (let i = 0; i < upstream.chunks; i++) {
        send({ ...base, choices: [{ index: 0, delta: { content: `tok${i} ` } }] })
        await new Promise((resolve) =>
          upstream.delayEveryMs > 0 ? setTimeout(resolve, upstream.delayEveryMs) : setImmediate(resolve),
        )
      }
      send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })
      send({
        ...base,
        choices: [],
        usage: { prompt_tokens: 50, completion_tokens: upstream.chunks, total_tokens: 50 + upstream.chunks },
      })
      res.end('data: [DONE]\n\n')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

const summary = (values: readonly number[]) =>
  `p50 ${round(percentile(values, 50), 1)} / p95 ${round(percentile(values, 95), 1)} / p99 ${round(percentile(values, 99), 1)}`

interface TurnTiming {
  firstEventMs: number
  /** Time to the first message.delta (0 if none). */
  firstDeltaMs: number
  totalMs: number
  events: number
  deltas: number
  firstToLastMs: number
  lastSeq: number
}

/** Posts a turn, reads it to the end (or until `stopAfter` events), timing the events. */
async function timedTurn(
  baseUrl: string,
  key: string,
  body: Record<string, unknown>,
  options: { stopAfter?: number } = {},
): Promise<TurnTiming> {
  const started = performance.now()
  const controller = new AbortController()
  const res = await fetch(`${baseUrl}/svc/code/v1/turns`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: controller.signal,
  })
  if (res.status !== 200) throw new Error(`turn answered ${res.status}: ${await res.text()}`)
  const parser = new NdjsonEventParser()
  const reader = res.body!.getReader()
  let first = 0
  let firstDelta = 0
  let firstDurable = 0
  let last = 0
  let events = 0
  let deltas = 0
  let lastSeq = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    for (const event of parser.push(value)) {
      const now = performance.now()
      if (first === 0) first = now
      if (event.type === 'heartbeat') continue
      if (firstDurable === 0) firstDurable = now
      last = now
      events += 1
      lastSeq = event.seq
      if (event.type === 'message.delta') {
        if (firstDelta === 0) firstDelta = now
        deltas += (event.data.delta.match(/tok\d+ /g) ?? []).length
      }
    }
    if (options.stopAfter !== undefined && events >= options.stopAfter) {
      controller.abort()
      break
    }
  }
  return {
    firstEventMs: first - started,
    firstDeltaMs: firstDelta === 0 ? 0 : firstDelta - started,
    totalMs: performance.now() - started,
    events,
    deltas,
    firstToLastMs: last - firstDurable,
    lastSeq,
  }
}

const turnBody = (overrides: Record<string, unknown>) => ({
  protocol: 'svc.code.v1',
  session_id: 'bench',
  run_id: crypto.randomUUID(),
  turn_id: 'turn-1',
  model: 'svc-comb',
  mode: 'auto',
  request: 'Say hello',
  workspace: {},
  transcript: [],
  capabilities: {},
  ...overrides,
})

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-agent-'))
  const mock = await startMockUpstream()
  const before = new Set(descendantsNamed(process.pid, 'workerd'))
  const stack = await startStack({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    logLevel: LogLevel.WARN,
    bindings: {
      MODEL_PROVIDERS: JSON.stringify({
        version: 1,
        providers: [
          { id: 'bench', kind: 'openai-compatible', baseUrl: mock.baseUrl, models: { 'svc-comb': 'bench' } },
        ],
      }),
    },
  })
  const workerd = descendantsNamed(process.pid, 'workerd').filter((p) => !before.has(p))
  const { testKey, liveKey } = stack.credentials
  try {
    // Warm-up: isolates, the tokenizer, the key cache, the RateLimiter objects.
    for (let i = 0; i < 10; i++) await timedTurn(stack.baseUrl, testKey, turnBody({}))
    upstream.chunks = 50
    await timedTurn(stack.baseUrl, liveKey, turnBody({}))

    // 1. Time to first event: a live turn whose model takes 100 ms to its first byte (the events
    //    before it must not wait for it), and a whole test-key turn (simulated model, in-process).
    upstream.chunks = 20
    upstream.firstByteDelayMs = 100
    const ttfe: number[] = []
    const ttfd: number[] = []
    for (let i = 0; i < TTFE_TURNS / 2; i++) {
      const t = await timedTurn(stack.baseUrl, liveKey, turnBody({}))
      ttfe.push(t.firstEventMs)
      ttfd.push(t.firstDeltaMs)
    }
    upstream.firstByteDelayMs = 0
    const whole: number[] = []
    let smallEvents = 0
    for (let i = 0; i < TTFE_TURNS; i++) {
      const t = await timedTurn(stack.baseUrl, testKey, turnBody({}))
      whole.push(t.totalMs)
      smallEvents = t.events
    }

    // 2. Long streamed turns (live key, mock upstream).
    upstream.chunks = LONG_CHUNKS
    const eventsPerSecond: number[] = []
    const deltasPerSecond: number[] = []
    const cpuPerEvent: number[] = []
    let long: { body: Record<string, unknown>; timing: TurnTiming } | null = null
    for (let i = 0; i < LONG_TURNS; i++) {
      const body = turnBody({})
      const cpu0 = cpuSeconds(workerd)
      const timing = await timedTurn(stack.baseUrl, liveKey, body)
      const cpu = cpuSeconds(workerd) - cpu0
      if (timing.deltas !== LONG_CHUNKS)
        throw new Error(`expected ${LONG_CHUNKS} deltas, got ${timing.deltas}`)
      eventsPerSecond.push(timing.events / (timing.firstToLastMs / 1000))
      deltasPerSecond.push(timing.deltas / (timing.firstToLastMs / 1000))
      cpuPerEvent.push((cpu / timing.events) * 1e6)
      long = { body, timing }
      console.error(
        `long turn ${i + 1}: ${timing.events} events (${timing.deltas} deltas) in ${round(timing.firstToLastMs, 0)} ms`,
      )
    }
    if (!long) throw new Error('no long turn ran')

    // 3. Resume: reattach to the finished long turn from a cursor.
    const resumeOne: number[] = []
    const resumeAllFirst: number[] = []
    const resumeAllTotal: number[] = []
    for (let i = 0; i < RESUMES; i++) {
      const near = await timedTurn(stack.baseUrl, liveKey, { ...long.body, cursor: long.timing.lastSeq - 1 })
      if (near.events !== 1) throw new Error(`a resume from the last seq - 1 replayed ${near.events} events`)
      resumeOne.push(near.firstEventMs)
      const all = await timedTurn(stack.baseUrl, liveKey, { ...long.body, cursor: 0 })
      if (all.events !== long.timing.events) throw new Error('a full replay did not return every event')
      resumeAllFirst.push(all.firstEventMs)
      resumeAllTotal.push(all.totalMs)
    }

    // 4. Mid-stream: drop the connection halfway through a live turn, reattach at once.
    upstream.chunks = 400
    upstream.delayEveryMs = 2
    const midStream: number[] = []
    for (let i = 0; i < 10; i++) {
      const body = turnBody({})
      const cut = await timedTurn(stack.baseUrl, liveKey, body, { stopAfter: 60 })
      const resumed = await timedTurn(stack.baseUrl, liveKey, { ...body, cursor: cut.lastSeq })
      midStream.push(resumed.firstEventMs)
    }

    console.log(
      `\n${os.cpus().length} CPUs, load ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(
          ' ',
        )}; ${TTFE_TURNS} short turns, ${LONG_TURNS} long turns of ${LONG_CHUNKS} upstream deltas, ${RESUMES} resumes\n`,
    )
    console.log('| measure | result |')
    console.log('|---|---|')
    console.log(
      `| time to first event (turn.started), live turn, model first byte after 100 ms (ms) | ${summary(ttfe)} |`,
    )
    console.log(`| time to first message.delta, same turns (ms) | ${summary(ttfd)} |`)
    console.log(`| whole test-key turn, simulated model, ${smallEvents} events (ms) | ${summary(whole)} |`)
    console.log(`| long turn: events/s (median) | ${round(percentile(eventsPerSecond, 50), 0)} |`)
    console.log(`| long turn: upstream deltas/s (median) | ${round(percentile(deltasPerSecond, 50), 0)} |`)
    console.log(`| long turn: events per turn | ${long.timing.events} |`)
    console.log(
      `| long turn: workerd CPU per event (µs, median) | ${round(percentile(cpuPerEvent, 50), 0)} |`,
    )
    console.log(`| resume, 1 event to replay: first event (ms) | ${summary(resumeOne)} |`)
    console.log(
      `| resume from cursor 0 (${long.timing.events} events): first event (ms) | ${summary(resumeAllFirst)} |`,
    )
    console.log(
      `| resume from cursor 0 (${long.timing.events} events): complete (ms) | ${summary(resumeAllTotal)} |`,
    )
    console.log(`| resume mid-stream after a dropped connection: first event (ms) | ${summary(midStream)} |`)
  } finally {
    await stack.stop()
    await mock.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
process.exit(0)
