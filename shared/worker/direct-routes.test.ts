/**
 * Direct routes answer the gateway's RPC without the Hono app; the same handler also serves the
 * Hono route. These tests hold both ways to the same answer, byte for byte, on the real families
 * that use them (platform's algorithm registry, the models catalogs) and on a small app.
 */
import { createExecutionContext, env } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import ModelsWorker from '../../functions/models/src/index'
import PlatformWorker from '../../functions/platform/src/index'
import type { PlatformEnv } from '../../functions/platform/src/platform.context'
import { AppError } from '../http/errors'
import { answerDirectly, DirectRoutes } from './direct-routes'
import { createFamilyApp } from './family-app'
import type { FamilyResponse, ForwardedRequest, HeaderMap } from './family-rpc'
import type { RequestContext } from './request-context'

const BASE = 'https://svc.test'

function context(): RequestContext {
  return {
    requestId: `req_${crypto.randomUUID().replaceAll('-', '')}`,
    identity: {
      tenantId: crypto.randomUUID(),
      principal: { kind: 'api_key', keyId: crypto.randomUUID(), mode: 'live' },
      role: 'owner',
      planId: 'pro',
      scopes: [],
    },
    maxBodyBytes: 0,
    baseUrl: BASE,
  }
}

function forwarded(pathAndQuery: string, headers: HeaderMap = {}, method = 'GET'): ForwardedRequest {
  const url = new URL(pathAndQuery, BASE)
  return { method, url: url.href, path: url.pathname, headers, body: null, context: context() }
}

/** The same request answered through the Hono app: what handle() returned before direct routes. */
async function throughHono(
  worker: PlatformWorker | ModelsWorker,
  request: ForwardedRequest,
): Promise<{ status: number; headers: HeaderMap; body: string | null }> {
  const res = await worker.serve(
    new Request(request.url, { method: request.method, headers: request.headers }),
    request.context,
  )
  const headers: HeaderMap = {}
  for (const [name, value] of res.headers) headers[name] = value
  return { status: res.status, headers, body: res.body ? await res.text() : null }
}

function plain(out: FamilyResponse): { status: number; headers: HeaderMap; body: string | null } {
  expect(out.body === null || typeof out.body === 'string').toBe(true)
  return { status: out.status, headers: { ...out.headers }, body: out.body as string | null }
}

describe('direct routes on the real families: the RPC answer equals the Hono answer', () => {
  const platform = () => new PlatformWorker(createExecutionContext(), env as unknown as PlatformEnv)
  const models = () => new ModelsWorker(createExecutionContext(), env)

  const platformCases: [string, number][] = [
    ['/platform/v1/crypto/algorithms?type=kem', 200],
    ['/platform/v1/crypto/algorithms?type=KEM&status=nist-final', 200],
    ['/platform/v1/crypto/algorithms', 200],
    ['/platform/v1/crypto/algorithms?type=kem&type=signature', 200],
    ['/platform/v1/crypto/algorithms?type=%6Bem', 200],
    ['/platform/v1/crypto/algorithms?type=bogus', 400],
    [`/platform/v1/crypto/algorithms?status=${'x'.repeat(40)}`, 400],
  ]
  for (const [path, status] of platformCases) {
    it(`GET ${path} → ${status}, same status, headers and body both ways`, async () => {
      const request = forwarded(path)
      const direct = plain(await platform().handle(request))
      expect(direct.status).toBe(status)
      expect(direct.headers['x-request-id']).toBe(request.context.requestId)
      expect(direct.headers['content-type']).toBe('application/json')
      expect(direct).toEqual(await throughHono(platform(), request))
    })
  }

  it('an invalid filter names the allowed values (the registry decides, not the route)', async () => {
    const out = plain(await platform().handle(forwarded('/platform/v1/crypto/algorithms?type=bogus')))
    const { error } = JSON.parse(out.body ?? '') as {
      error: { code: string; message: string; param: string }
    }
    expect(error.param).toBe('type')
    expect(error.message).toContain('kem')
  })

  for (const path of ['/svc/models', '/svc/router/models']) {
    it(`GET ${path}: the catalog, and 304 for the current ETag, both ways`, async () => {
      const first = plain(await models().handle(forwarded(path)))
      expect(first.status).toBe(200)
      expect(first.headers.etag).toMatch(/^"catalog-/)
      expect(typeof JSON.parse(first.body ?? '')).toBe('object')
      const request = forwarded(path)
      expect(first.body).toEqual((await throughHono(models(), request)).body)
      expect(plain(await models().handle(request))).toEqual(await throughHono(models(), request))

      const revalidate = forwarded(path, { 'if-none-match': first.headers.etag ?? '' })
      const notModified = plain(await models().handle(revalidate))
      expect(notModified.status).toBe(304)
      expect(notModified.body).toBeNull()
      expect(notModified).toEqual(await throughHono(models(), revalidate))
    })
  }

  it('HEAD is not a direct route: the Hono app answers it (status and headers, no body)', async () => {
    const out = await models().handle(forwarded('/svc/models', {}, 'HEAD'))
    expect(out.status).toBe(200)
    expect(out.headers.etag).toMatch(/^"catalog-/)
    expect(out.body).toBeNull()
  })
})

describe('DirectRoutes', () => {
  it('matches GET of the exact path only', () => {
    const routes = new DirectRoutes()
    const app = createFamilyApp<object>()
    const handler = () => ({ status: 200, headers: {}, body: 'ok' })
    routes.get(app, '/x/v1/things', handler)
    expect(routes.find(forwarded('/x/v1/things?limit=1'))).toBe(handler)
    expect(routes.find(forwarded('/x/v1/things', {}, 'POST'))).toBeUndefined()
    expect(routes.find(forwarded('/x/v1/things/1'))).toBeUndefined()
    expect(routes.find(forwarded('/x/v1'))).toBeUndefined()
  })

  it('hands the handler the decoded query, the headers and the context; the Hono route gets the same', async () => {
    const routes = new DirectRoutes()
    const app = createFamilyApp<object>()
    routes.get(app, '/x/echo', ({ query, header, context: ctx }) => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, accept: header('Accept') ?? null, tenant: ctx.identity?.tenantId }),
    }))
    const request = forwarded('/x/echo?a=1&b=two+words&a=2&c=%E2%9C%93', { accept: 'application/json' })
    const out = answerDirectly(routes.find(request)!, request, request.context)
    expect(JSON.parse(out.body as string)).toEqual({
      query: { a: '1', b: 'two words', c: '✓' },
      accept: 'application/json',
      tenant: request.context.identity?.tenantId,
    })
    const viaHono = await app.request(request.url, { headers: { accept: 'application/json' } })
    expect(JSON.parse(await viaHono.text()).query).toEqual({ a: '1', b: 'two words', c: '✓' })
  })

  it('an AppError becomes its JSON error; anything else an opaque 500 with the request id', () => {
    const routes = new DirectRoutes()
    const app = createFamilyApp<object>()
    routes.get(app, '/x/refuse', () => {
      throw new AppError(409, 'busy', 'Try later.', { headers: { 'Retry-After': '3' } })
    })
    routes.get(app, '/x/crash', () => {
      throw new Error('secret internal detail')
    })
    const refuse = forwarded('/x/refuse')
    const refused = answerDirectly(routes.find(refuse)!, refuse, refuse.context)
    expect(refused.status).toBe(409)
    expect(refused.headers['retry-after']).toBe('3')
    expect(refused.headers['x-request-id']).toBe(refuse.context.requestId)
    expect(JSON.parse(refused.body as string).error.code).toBe('busy')

    const crash = forwarded('/x/crash')
    const crashed = answerDirectly(routes.find(crash)!, crash, crash.context)
    expect(crashed.status).toBe(500)
    expect(crashed.body).not.toContain('secret')
    expect(JSON.parse(crashed.body as string).error.code).toBe('internal_error')
  })
})
