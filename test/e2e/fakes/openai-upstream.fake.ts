/**
 * The model provider for the end-to-end stack: one fake OpenAI-compatible server
 * (test/fakes/openai-upstream.ts) playing several providers through path routes, plus an HTTP
 * control endpoint, because this module runs in the global-setup process while the tests run in
 * another: tests script faults and read what the upstream received over HTTP
 * (`upstreamControl(inject('stack').fakes['openai-upstream'].controlUrl)`).
 *
 * Providers (MODEL_PROVIDERS given to the stack):
 *   fake     /v1          svc-cell, svc-hive           plain traffic, SDK tests, metering
 *   dead     a closed port svc-hive (then fake)           connection errors
 *   primary  /primary/v1  svc-brood (then backup)      failover, retries, no-failover cases
 *   flaky    /flaky/v1    svc-comb  (then backup)      circuit breaker (threshold 4, cool-down 60 s)
 *   slow     /slow/v1     svc-buzz  (then backup)      timeouts (1 s) and stream stalls
 *   backup   /backup/v1   svc-brood, svc-comb, svc-buzz
 * svc-swarm has no provider (503 provider_not_configured for live keys).
 */
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  type RecordedUpstreamRequest,
  startFakeOpenAIUpstream,
  type UpstreamRule,
} from '../../fakes/openai-upstream.ts'
import type { FakeService } from '../stack.setup.ts'

export const UPSTREAM_MODELS = {
  'svc-cell': 'fake-cell',
  'svc-hive': 'fake-hive',
  'svc-brood': 'fake-brood',
  'svc-comb': 'fake-comb',
  'svc-buzz': 'fake-buzz',
} as const

/** The subset of a recorded request the control endpoint returns. */
export type ObservedRequest = Pick<
  RecordedUpstreamRequest,
  'method' | 'path' | 'route' | 'body' | 'fault' | 'closedEarly' | 'receivedAt'
> & { readonly headers: Readonly<Record<string, string>> }

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  const text = Buffer.concat(chunks).toString('utf8')
  return text ? JSON.parse(text) : null
}

/** Test-side client of the control endpoint. */
export function upstreamControl(controlUrl: string) {
  return {
    async script(rule: UpstreamRule): Promise<void> {
      const res = await fetch(`${controlUrl}/script`, { method: 'POST', body: JSON.stringify(rule) })
      if (res.status !== 204) throw new Error(`script failed: ${res.status} ${await res.text()}`)
    },
    /** Chat requests whose messages contain `tag`, oldest first. */
    async requests(tag: string): Promise<ObservedRequest[]> {
      const res = await fetch(`${controlUrl}/requests?contains=${encodeURIComponent(tag)}`)
      return (await res.json()) as ObservedRequest[]
    },
  }
}

const service: FakeService = {
  name: 'openai-upstream',
  async start() {
    const upstream = await startFakeOpenAIUpstream()
    const control = createServer(async (req, res) => {
      const url = new URL(req.url ?? '/', 'http://control')
      try {
        if (req.method === 'POST' && url.pathname === '/script') {
          upstream.script((await readJson(req)) as UpstreamRule)
          res.writeHead(204).end()
          return
        }
        if (req.method === 'GET' && url.pathname === '/requests') {
          const tag = url.searchParams.get('contains') ?? ''
          const observed: ObservedRequest[] = upstream
            .chatRequests()
            .filter((r) => JSON.stringify((r.body as { messages?: unknown })?.messages ?? '').includes(tag))
            .map(({ method, path, route, body, fault, closedEarly, receivedAt, headers }) => ({
              method,
              path,
              route,
              body,
              fault,
              closedEarly,
              receivedAt,
              headers: {
                'x-client-request-id': headers['x-client-request-id'] ?? '',
                authorization: headers.authorization ? 'present' : '',
              },
            }))
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(observed))
          return
        }
        res.writeHead(404).end()
      } catch (err) {
        res.writeHead(400).end(String(err))
      }
    })
    await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve))
    const controlUrl = `http://127.0.0.1:${(control.address() as AddressInfo).port}`

    const key = { apiKeySecret: 'PROVIDER_FAKE_API_KEY' }
    const at = (route: string) => (route ? `${upstream.url}/${route}/v1` : upstream.baseUrl)
    const providers = {
      version: 1,
      providers: [
        {
          id: 'fake',
          kind: 'openai-compatible',
          baseUrl: at(''),
          ...key,
          models: { 'svc-cell': UPSTREAM_MODELS['svc-cell'], 'svc-hive': UPSTREAM_MODELS['svc-hive'] },
        },
        {
          // Nothing listens on port 9 (discard) on the test machine: every attempt is a connect error.
          id: 'dead',
          kind: 'openai-compatible',
          baseUrl: 'http://127.0.0.1:9/v1',
          models: { 'svc-hive': UPSTREAM_MODELS['svc-hive'] },
        },
        {
          id: 'primary',
          kind: 'openai-compatible',
          baseUrl: at('primary'),
          ...key,
          models: { 'svc-brood': UPSTREAM_MODELS['svc-brood'] },
        },
        {
          id: 'flaky',
          kind: 'openai-compatible',
          baseUrl: at('flaky'),
          ...key,
          models: { 'svc-comb': UPSTREAM_MODELS['svc-comb'] },
        },
        {
          id: 'slow',
          kind: 'openai-compatible',
          baseUrl: at('slow'),
          ...key,
          timeoutMs: 1_000,
          streamIdleTimeoutMs: 1_500,
          models: { 'svc-buzz': UPSTREAM_MODELS['svc-buzz'] },
        },
        {
          id: 'backup',
          kind: 'openai-compatible',
          baseUrl: at('backup'),
          ...key,
          models: {
            'svc-brood': UPSTREAM_MODELS['svc-brood'],
            'svc-comb': UPSTREAM_MODELS['svc-comb'],
            'svc-buzz': UPSTREAM_MODELS['svc-buzz'],
          },
        },
      ],
      routes: {
        'svc-cell': ['fake'],
        'svc-hive': ['dead', 'fake'],
        'svc-brood': ['primary', 'backup'],
        'svc-comb': ['flaky', 'backup'],
        'svc-buzz': ['slow', 'backup'],
      },
      retry: { maxRounds: 2, baseDelayMs: 50, maxDelayMs: 200, maxRetryAfterMs: 2_000 },
      breaker: { failureThreshold: 4, cooldownMs: 60_000 },
    }
    return {
      env: {
        MODEL_PROVIDERS: JSON.stringify(providers),
        PROVIDER_FAKE_API_KEY: upstream.apiKey ?? '',
      },
      // The same provider config, for tests that start a stack of their own (restart tests).
      provide: {
        controlUrl,
        url: upstream.url,
        env: { MODEL_PROVIDERS: JSON.stringify(providers), PROVIDER_FAKE_API_KEY: upstream.apiKey ?? '' },
      },
      async stop() {
        await new Promise<void>((resolve) => control.close(() => resolve()))
        await upstream.stop()
      },
    }
  },
}

export default service
