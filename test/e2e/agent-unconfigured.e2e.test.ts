/**
 * A deployment with no upstream configured at all (a second `npm start` on its own embedded
 * database, with every provider variable empty): what the agent plane needs from outside answers 503 with the variables to set,
 * input is still validated first, and test keys keep working on the built-in model and index.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { ROOT } from '../../scripts/workers.ts'
import { launchStack, type RunningStack } from '../support/stack-process.ts'

const fixture = inject('stack')

const NOTHING_CONFIGURED = {
  MODEL_PROVIDERS: '',
  SEARCH_PROVIDERS: '',
  BRAVE_SEARCH_API_KEY: '',
  TAVILY_API_KEY: '',
  SEARXNG_BASE_URL: '',
  STT_PROVIDERS: '',
  STT_OPENAI_API_KEY: '',
  STT_GROQ_API_KEY: '',
  STT_LOCAL_BASE_URL: '',
}

describe(`a deployment without upstreams (${fixture.kind})`, () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-e2e-unconfigured-'))
  let stack: RunningStack

  beforeAll(async () => {
    // Its own embedded database: seeding the suite's database from another data folder would
    // give the development owner a new password under the other tests' feet.
    stack = await launchStack({ dataDir, env: NOTHING_CONFIGURED })
  })

  afterAll(async () => {
    await stack?.stop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  const call = (p: string, key: string, init: RequestInit = {}) =>
    fetch(`${stack.baseUrl}${p}`, { ...init, headers: { authorization: `Bearer ${key}`, ...init.headers } })
  const json = { 'content-type': 'application/json' }

  it('search: 503 naming what to configure (400 still comes first for bad input)', async () => {
    const res = await call('/svc/code/v1/search', stack.credentials.liveKey, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ query: 'anything' }),
    })
    expect(res.status).toBe(503)
    expect(await res.json()).toEqual({
      error: {
        type: 'service_unavailable',
        code: 'search_unavailable',
        param: null,
        message:
          'no web search provider is configured on this server (set BRAVE_SEARCH_API_KEY, TAVILY_API_KEY or SEARXNG_BASE_URL)',
      },
    })
    const bad = await call('/svc/code/v1/search', stack.credentials.liveKey, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ count: 3 }),
    })
    expect(bad.status).toBe(400)
  })

  it('transcription: 503 for valid audio, 400 for invalid audio', async () => {
    const form = (bytes: Uint8Array<ArrayBuffer>, name: string) => {
      const f = new FormData()
      f.append('file', new Blob([bytes]), name)
      return f
    }
    const mp3 = new Uint8Array(readFileSync(path.join(ROOT, 'test/fixtures/audio/hello.mp3')))
    const res = await call('/svc/code/v1/transcribe', stack.credentials.liveKey, {
      method: 'POST',
      body: form(mp3, 'hello.mp3'),
    })
    expect(res.status).toBe(503)
    expect(await res.json()).toMatchObject({ error: { code: 'transcription_unavailable' } })
    const bad = await call('/svc/code/v1/transcribe', stack.credentials.liveKey, {
      method: 'POST',
      body: form(new TextEncoder().encode('plain text'), 'a.wav'),
    })
    expect(bad.status).toBe(400)
  })

  it('agent turns: 503 for a live key (no model provider), 200 for a test key', async () => {
    const body = {
      protocol: 'svc.code.v1',
      session_id: 's',
      turn_id: 't',
      model: 'svc-comb',
      mode: 'auto',
      request: 'hello',
      workspace: {},
      transcript: [],
      capabilities: {},
    }
    const live = await call('/svc/code/v1/turns', stack.credentials.liveKey, {
      method: 'POST',
      headers: json,
      body: JSON.stringify(body),
    })
    expect(live.status).toBe(503)
    expect(await live.json()).toMatchObject({
      error: { code: 'provider_not_configured', type: 'service_unavailable' },
    })
    const test = await call('/svc/code/v1/turns', stack.credentials.testKey, {
      method: 'POST',
      headers: json,
      body: JSON.stringify(body),
    })
    expect(test.status).toBe(200)
    expect((await test.text()).trim().split('\n').at(-1)).toContain('"type":"turn.completed"')
  })
})
