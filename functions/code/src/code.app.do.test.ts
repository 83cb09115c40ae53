/**
 * The code worker's routes inside workerd with its real bindings (AgentRun objects, the env),
 * called the way the gateway calls them: a request plus a bound request context. Covers the
 * refusals that depend on the caller's plan or on the deployment's configuration.
 */
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  codeEnv,
  identityFor,
  installLimiter,
  limiter,
  mutableEnv,
  TEST_SNAPSHOT,
  uninstallLimiter,
} from '../../../durable-objects/agent-run/agent-run.do-fixtures'
import { PLAN_CATALOG_CONFIG } from '../../../shared/plans/plan-catalog'
import type { Identity } from '../../../shared/worker/request-context'
import { bindRequestContext } from '../../../shared/worker/request-context'
import { codeApp } from './code.app'

const realRuns = mutableEnv.AGENT_RUN

beforeEach(() => {
  installLimiter()
})

afterEach(() => {
  mutableEnv.AGENT_RUN = realRuns
  delete mutableEnv.PLAN_CATALOG
  uninstallLimiter()
})

/** The built-in catalog with one plan changed, as a deployment would set PLAN_CATALOG. */
function catalogWith(planId: string, change: Record<string, unknown>): string {
  return JSON.stringify({
    ...PLAN_CATALOG_CONFIG,
    plans: PLAN_CATALOG_CONFIG.plans.map((p) => (p.id === planId ? { ...p, ...change } : p)),
  })
}

async function call(
  method: string,
  path: string,
  identity: Identity,
  body?: unknown,
  maxBodyBytes = 8 * 1024 * 1024,
): Promise<Response> {
  const request = new Request(`https://svc.test${path}`, {
    method,
    ...(body === undefined
      ? {}
      : body instanceof FormData
        ? { body }
        : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  })
  bindRequestContext(request, { requestId: 'req_test', identity, maxBodyBytes, baseUrl: 'https://svc.test' })
  const ctx = createExecutionContext()
  const response = await codeApp.fetch(request, codeEnv, ctx)
  await waitOnExecutionContext(ctx)
  return response
}

const turn = (overrides: Record<string, unknown> = {}) => ({
  protocol: 'svc.code.v1',
  session_id: 's',
  turn_id: 't',
  model: 'svc-comb',
  mode: 'edit',
  request: 'hello',
  workspace: {},
  transcript: [],
  capabilities: {},
  ...overrides,
})

describe('entitlements (403 with the action-required body)', () => {
  it('refuses a model the plan does not include', async () => {
    const res = await call('POST', '/svc/code/v1/turns', identityFor('test', 'free'), turn())
    expect(res.status).toBe(403)
    expect(res.headers.get('x-should-retry')).toBe('false')
    expect(await res.json()).toMatchObject({
      error: { code: 'model_access_required', param: 'model' },
      svc_upgrade: {
        reason: 'model_access_required',
        current_plan: 'free',
        required_plan: 'pro',
        requested_model: 'svc-comb',
      },
    })
  })

  it('refuses web search and transcription on a plan without them', async () => {
    const search = await call('POST', '/svc/code/v1/search', identityFor('test', 'free'), { query: 'x' })
    expect(search.status).toBe(403)
    expect(await search.json()).toMatchObject({
      svc_upgrade: { reason: 'feature_required', requested_feature: 'web_search', required_plan: 'pro' },
    })
    const form = new FormData()
    form.append('file', new Blob([new Uint8Array([0x66, 0x4c, 0x61, 0x43])]), 'a.flac')
    const audio = await call('POST', '/svc/code/v1/transcribe', identityFor('test', 'free'), form)
    expect(audio.status).toBe(403)
    expect(await audio.json()).toMatchObject({
      svc_upgrade: { reason: 'feature_required', requested_feature: 'transcription', required_plan: 'pro' },
    })
  })
})

describe("the deployment's plan catalog (PLAN_CATALOG)", () => {
  it('decides agent turns, web search and transcription as it decides chat', async () => {
    mutableEnv.PLAN_CATALOG = catalogWith('team', { features: ['mcp'] })
    const res = await call('POST', '/svc/code/v1/turns', identityFor('test', 'team'), turn())
    expect(res.status).toBe(403)
    expect(await res.json()).toMatchObject({
      svc_upgrade: { reason: 'feature_required', requested_feature: 'agent_runs', current_plan: 'team' },
    })
    const search = await call('POST', '/svc/code/v1/search', identityFor('test', 'team'), { query: 'x' })
    expect(search.status).toBe(403)
    expect(await search.json()).toMatchObject({ svc_upgrade: { requested_feature: 'web_search' } })
  })

  it('an invalid PLAN_CATALOG is the same 503 plan_catalog_invalid on every agent route', async () => {
    mutableEnv.PLAN_CATALOG = '{"version":"yesterday"}'
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {})
    const form = new FormData()
    form.append('file', new Blob([new Uint8Array([0x66, 0x4c, 0x61, 0x43])]), 'a.flac')
    const answers = [
      await call('POST', '/svc/code/v1/turns', identityFor('test'), turn()),
      await call('POST', '/svc/code/v1/search', identityFor('test'), { query: 'x' }),
      await call('POST', '/svc/code/v1/transcribe', identityFor('test'), form),
    ]
    errors.mockRestore()
    for (const res of answers) {
      expect(res.status).toBe(503)
      expect(await res.json()).toMatchObject({ error: { code: 'plan_catalog_invalid' } })
    }
  })

  it('a plan id the catalog does not define is 503 plan_not_in_catalog, as on chat', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {})
    const res = await call('POST', '/svc/code/v1/turns', identityFor('test', 'gold'), turn())
    errors.mockRestore()
    expect(res.status).toBe(503)
    expect(await res.json()).toMatchObject({ error: { code: 'plan_not_in_catalog' } })
  })
})

describe('scopes', () => {
  it('refuses a credential restricted to other scopes (403 insufficient_scope), allows agents:write', async () => {
    const restricted = { ...identityFor('test'), scopes: ['chat:write'] }
    const res = await call('POST', '/svc/code/v1/search', restricted, { query: 'x' })
    expect(res.status).toBe(403)
    expect(await res.json()).toMatchObject({
      error: {
        code: 'insufficient_scope',
        type: 'permission_error',
        message: expect.stringContaining('agents:write'),
      },
    })
    const allowed = await call(
      'POST',
      '/svc/code/v1/search',
      { ...restricted, scopes: ['agents:write'] },
      { query: 'x' },
    )
    expect(allowed.status).toBe(200)
  })
})

describe('configuration and availability (503)', () => {
  it('refuses a live turn when no model provider serves its model', async () => {
    const res = await call('POST', '/svc/code/v1/turns', identityFor('live'), turn())
    expect(res.status).toBe(503)
    expect(await res.json()).toMatchObject({
      error: {
        code: 'provider_not_configured',
        message: expect.stringContaining('test keys (svc_sk_test_) use the built-in model'),
      },
    })
  })

  it('answers 503 with Retry-After when the durable run store cannot be reached', async () => {
    const broken = {
      async postTurn() {
        throw new Error('Durable Object storage is overloaded')
      },
      async status() {
        throw new Error('Durable Object storage is overloaded')
      },
    }
    mutableEnv.AGENT_RUN = { idFromName: (name: string) => name, get: () => broken }
    const res = await call('POST', '/svc/code/v1/turns', identityFor('test'), turn())
    expect(res.status).toBe(503)
    expect(res.headers.get('retry-after')).toBe('2')
    expect(await res.json()).toMatchObject({
      error: { code: 'run_store_unavailable', type: 'service_unavailable' },
    })
    const status = await call('GET', `/svc/agents/runs/${crypto.randomUUID()}`, identityFor('test'))
    expect(status.status).toBe(503)
  })

  it('answers 503 for a live search or transcription with no provider configured', async () => {
    const search = await call('POST', '/svc/code/v1/search', identityFor('live'), { query: 'x' })
    expect(search.status).toBe(503)
    expect(await search.json()).toMatchObject({ error: { code: 'search_unavailable' } })
  })
})

/** A real FLAC header (STREAMINFO: 16 kHz mono, 48,000 samples = 3 s), as a client uploads it. */
function flac(): FormData {
  const bytes = new Uint8Array(42)
  bytes.set([0x66, 0x4c, 0x61, 0x43, 0x80, 0x00, 0x00, 0x22], 0)
  // STREAMINFO: block sizes, frame sizes (zeros), then sample rate 16000, 1 channel, 16 bits, 48000 samples.
  bytes.set([0x10, 0x00, 0x10, 0x00], 8)
  bytes.set([0x03, 0xe8, 0x00, 0xf0, 0x00, 0x00, 0xbb, 0x80], 18)
  const form = new FormData()
  form.append('file', new Blob([bytes], { type: 'audio/flac' }), 'note.flac')
  return form
}

describe('metering of web search and transcription', () => {
  it('admits a search at the RateLimiter and records it as one request of web_search before answering', async () => {
    const res = await call('POST', '/svc/code/v1/search', identityFor('test'), { query: 'durable objects' })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-ratelimit-limit-requests')).toBe(String(TEST_SNAPSHOT.limitRequests))
    expect(limiter.acquired).toEqual([{ model: 'web_search', estimatedTokens: 0, estimatedQuantity: 1 }])
    expect(limiter.settled).toEqual([
      expect.objectContaining({
        model: 'web_search',
        endpoint: 'code.search',
        requestId: 'req_test',
        provider: 'builtin',
        usage: expect.objectContaining({ promptTokens: 0, completionTokens: 0, quantity: 1 }),
      }),
    ])
  })

  it('answers a refused search with the action-required body and runs no search', async () => {
    limiter.refuse = {
      kind: 'refused',
      snapshot: { ...TEST_SNAPSHOT, remainingRequests: 0 },
      decision: {
        schema_version: '2026-07-31',
        reason: 'tier_allowance_exhausted',
        current_plan: 'team',
        required_plan: null,
        requested_feature: 'web_search',
        binding_limit: { kind: 'requests', unit: 'requests', used: 5_000, limit: 5_000, remaining: 0 },
        actions: [{ kind: 'retry_later', label: 'Retry later', available: false, url: null }],
      },
    }
    const res = await call('POST', '/svc/code/v1/search', identityFor('test'), { query: 'x' })
    expect(res.status).toBe(429)
    expect(res.headers.get('x-should-retry')).toBe('false')
    expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('0')
    expect(await res.json()).toMatchObject({
      error: { code: 'tier_allowance_exhausted', type: 'insufficient_quota' },
      svc_upgrade: { reason: 'tier_allowance_exhausted', binding_limit: { unit: 'requests' } },
    })
    expect(limiter.settled).toEqual([])
  })

  it('meters a transcription in seconds of audio: the upload estimated, then the transcriber figure', async () => {
    const res = await call('POST', '/svc/code/v1/transcribe', identityFor('test'), flac())
    expect(res.status).toBe(200)
    expect(res.headers.get('x-ratelimit-limit-requests')).not.toBeNull()
    expect(limiter.acquired).toEqual([{ model: 'transcription', estimatedTokens: 0, estimatedQuantity: 3 }])
    expect(limiter.settled).toEqual([
      expect.objectContaining({
        model: 'transcription',
        endpoint: 'code.transcribe',
        provider: 'test-mode',
        usage: expect.objectContaining({ quantity: 3 }),
      }),
    ])
  })

  it('checks a provider is configured before metering anything (503, nothing admitted)', async () => {
    const res = await call('POST', '/svc/code/v1/search', identityFor('live'), { query: 'x' })
    expect(res.status).toBe(503)
    expect(limiter.acquired).toEqual([])
  })
})

describe('runs', () => {
  it('answers 400 for a malformed run id and 404 for an unknown one', async () => {
    const bad = await call('GET', '/svc/agents/runs/123', identityFor('test'))
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ error: { code: 'invalid_run_id', param: 'runId' } })
    const unknown = await call('DELETE', `/svc/agents/runs/${crypto.randomUUID()}`, identityFor('test'))
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toMatchObject({ error: { code: 'run_not_found', type: 'not_found_error' } })
  })

  it('streams a turn as application/x-ndjson and reports it under its run id', async () => {
    const identity = identityFor('test')
    const runId = crypto.randomUUID()
    const res = await call('POST', '/svc/code/v1/turns', identity, turn({ run_id: runId }))
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8')
    expect(res.headers.get('x-svc-run-id')).toBe(runId)
    const lines = (await res.text()).trim().split('\n')
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ type: 'turn.completed', run_id: runId })
    const status = await call('GET', `/svc/agents/runs/${runId}`, identity)
    expect(await status.json()).toMatchObject({ id: runId, state: 'completed', last_seq: lines.length })
  })
})
