/**
 * The stack on plain `workerd serve` (scripts/stack.ts `runtime: 'workerd'`, what the benchmarks
 * run): started in this process on a free port with its own embedded PGlite, then driven over HTTP
 * through the gateway's socket. It proves the generated config wires what Miniflare wires for
 * `npm start`: the gateway's service bindings, the bindings of every family, the RateLimiter that
 * the code worker binds from the chat worker, and SQLite-backed Durable Objects on disk.
 * Runs once, on PGlite (vitest.config.ts): the database it uses is its own either way.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { type Stack, startStack } from '../../scripts/stack.ts'
import { workerdConfig } from '../../scripts/workerd-runtime.ts'

const fixture = inject('stack')

describe.skipIf(fixture.kind !== 'pglite')('the stack on plain workerd (runtime workerd)', () => {
  let dataDir = ''
  let stack: Stack | undefined
  const url = (p: string) => `${stack!.baseUrl}${p}`
  const auth = () => ({ authorization: `Bearer ${stack!.credentials.testKey}` })

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-e2e-workerd-'))
    stack = await startStack({ host: '127.0.0.1', port: 0, dataDir, runtime: 'workerd' })
  }, 90_000)

  afterAll(async () => {
    await stack?.stop()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  })

  it('runs without Miniflare and answers public routes, refusing calls without a key', async () => {
    expect(stack!.runtime).toBe('workerd')
    expect(stack!.miniflare).toBeUndefined()
    const models = await fetch(url('/svc/models'))
    expect(models.status).toBe(200)
    expect(((await models.json()) as { data: unknown[] }).data.length).toBeGreaterThan(0)
    const anonymous = await fetch(url('/svc/memories'))
    expect(anonymous.status).toBe(401)
  })

  it('answers a chat completion and a streamed one with the test key (simulated model)', async () => {
    const body = { model: 'svc-cell', messages: [{ role: 'user', content: 'Hello from workerd' }] }
    const headers = { ...auth(), 'content-type': 'application/json' }
    const plain = await fetch(url('/svc/chat/completions'), {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
    })
    expect(plain.status).toBe(200)
    const completion = (await plain.json()) as { object: string; choices: { message: { content: string } }[] }
    expect(completion.object).toBe('chat.completion')
    expect(completion.choices[0]?.message.content).toContain('Hello from workerd')

    const streamed = await fetch(url('/svc/chat/completions'), {
      method: 'POST',
      headers,
      body: JSON.stringify({ ...body, stream: true }),
    })
    expect(streamed.status).toBe(200)
    expect(streamed.headers.get('content-type')).toContain('text/event-stream')
    const text = await streamed.text()
    expect(text).toContain('"object":"chat.completion.chunk"')
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true)
  })

  it('takes an OTLP export into the local collector when no OTLP_COLLECTOR_URL is given', async () => {
    expect(stack!.telemetry).toEqual({
      collector: 'local',
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      dir: path.join(dataDir, 'telemetry'),
    })
    const issued = await fetch(url('/auth/service-token'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_id: stack!.credentials.serviceAccountId,
        client_secret: stack!.credentials.serviceAccountSecret,
        audience: 'internal-service',
      }),
    })
    expect(issued.status, await issued.clone().text()).toBe(200)
    const { access_token } = (await issued.json()) as { access_token: string }
    const exported = await fetch(url('/otlp/v1/logs'), {
      method: 'POST',
      headers: { authorization: `Bearer ${access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: 'on workerd' } }] }] }],
      }),
    })
    expect(exported.status, await exported.clone().text()).toBe(200)
    const [line] = readFileSync(path.join(dataDir, 'telemetry', 'logs.jsonl'), 'utf8')
      .trim()
      .split('\n')
    expect(JSON.parse(line!)).toMatchObject({
      resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: 'on workerd' } }] }] }],
    })
  })

  it('runs an agent turn in an AgentRun object of the code worker and keeps it on disk', async () => {
    const runId = crypto.randomUUID()
    const turn = await fetch(url('/svc/code/v1/turns'), {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({
        protocol: 'svc.code.v1',
        session_id: 'e2e-workerd',
        run_id: runId,
        turn_id: 'turn-1',
        model: 'svc-comb',
        mode: 'edit',
        request: 'Say hello',
        workspace: {},
        transcript: [],
        capabilities: {},
      }),
    })
    expect(turn.status).toBe(200)
    const events = (await turn.text())
      .split('\n')
      .filter((line) => line.trim())
      .map((line) => JSON.parse(line) as { type: string; run_id: string })
    expect(events.at(-1)?.type).toBe('turn.completed')

    const status = await fetch(url(`/svc/agents/runs/${runId}`), { headers: auth() })
    expect(status.status).toBe(200)
    expect(await status.json()).toMatchObject({
      object: 'agent.run',
      id: runId,
      state: 'completed',
      turn_count: 1,
    })
    // durableObjectStorage = localDisk: each namespace's SQLite files under <dataDir>/workerd.
    const agentRuns = path.join(dataDir, 'workerd', 'durable-objects', 'svc-code-AgentRun')
    expect(existsSync(agentRuns)).toBe(true)
    expect(readdirSync(agentRuns).some((f) => f.endsWith('.sqlite'))).toBe(true)
  })
})

describe('the generated workerd config', () => {
  const options = {
    host: '127.0.0.1',
    port: 0,
    entry: 'svc-gateway',
    dataDir: '/data',
    workers: [
      {
        name: 'svc-gateway',
        scriptPath: '/data/build/gateway/index.js',
        compatibilityDate: '2026-08-04',
        compatibilityFlags: [],
        options: {},
        durableObjectClasses: new Map<string, boolean>(),
      },
    ],
  }

  it('sets no V8 flags unless asked, and writes the ones given for diagnosis', () => {
    expect(workerdConfig({ ...options, v8Flags: [] }, '/data/workerd')).not.toContain('v8Flags')
    const config = workerdConfig({ ...options, v8Flags: ['--trace-gc', '--trace-gc-nvp'] }, '/data/workerd')
    expect(config).toContain('v8Flags = ["--trace-gc", "--trace-gc-nvp"],')
    expect(config).toContain('esModule = embed "../build/gateway/index.js"')
  })
})
