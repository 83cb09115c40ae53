import { describe, expect, it } from 'vitest'
import { fileStack } from './file-stack.ts'

const stack = await fileStack()
const url = (p: string) => `${stack.baseUrl}${p}`
const bearer = (key: string, extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${key}`,
  ...extra,
})

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string }
}

async function errorOf(res: Response): Promise<ErrorBody['error']> {
  const body = (await res.json()) as ErrorBody
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type'])
  return body.error
}

describe(`authentication (${stack.kind})`, () => {
  const protectedPaths: [string, string][] = [
    ['GET', '/svc/memories'],
    ['POST', '/svc/chat/completions'],
    ['POST', '/svc/code/v1/turns'],
    ['GET', '/svc/agents/runs/00000000-0000-4000-8000-000000000000'],
    ['GET', '/svc/quantum-reasoning/jobs'],
    ['POST', '/mcp'],
    ['POST', '/otlp/v1/traces'],
    ['GET', '/platform/v1/crypto/policy'],
    ['GET', '/no/such/path'],
  ]

  it.each(protectedPaths)('%s %s answers 401 without a credential', async (method, path) => {
    const res = await fetch(url(path), { method })
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /)
    expect((await errorOf(res)).code).toBe('missing_credential')
  })

  it('points MCP clients at the protected-resource metadata on 401', async () => {
    const res = await fetch(url('/mcp'), { method: 'POST' })
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${stack.baseUrl}/.well-known/oauth-protected-resource/mcp"`,
    )
  })

  it('refuses a wrong key, a malformed header and a revoked key with clear codes', async () => {
    const wrong = await fetch(url('/svc/memories'), {
      headers: bearer(`${stack.tenantA.liveKey.slice(0, -2)}zz`),
    })
    expect(wrong.status).toBe(401)
    expect((await errorOf(wrong)).code).toBe('invalid_api_key')

    const basic = await fetch(url('/svc/memories'), { headers: { authorization: 'Basic abc' } })
    expect(basic.status).toBe(401)
    expect((await errorOf(basic)).code).toBe('invalid_authorization_header')

    const revoked = await fetch(url('/svc/memories'), { headers: bearer(stack.tenantA.revokedKey) })
    expect(revoked.status).toBe(401)
    expect((await errorOf(revoked)).code).toBe('revoked_api_key')
  })

  it("accepts the seeded test and live keys (the development workspace npm start printed, and this file's)", async () => {
    const seeded = [
      stack.devWorkspace.testKey,
      stack.devWorkspace.liveKey,
      stack.tenantA.testKey,
      stack.tenantA.liveKey,
    ]
    for (const key of seeded) {
      const res = await fetch(url('/svc/memories'), { headers: bearer(key) })
      expect(res.status).toBe(200)
    }
  })
})

describe(`tenancy (${stack.kind})`, () => {
  it('refuses an x-svc-tenant header or tenantId query naming another tenant', async () => {
    const header = await fetch(url('/svc/memories'), {
      headers: bearer(stack.tenantA.liveKey, { 'x-svc-tenant': stack.tenantB.id }),
    })
    expect(header.status).toBe(403)
    const err = await errorOf(header)
    expect(err.code).toBe('tenant_mismatch')
    expect(err.param).toBe('x-svc-tenant')

    const query = await fetch(url(`/svc/memories?tenantId=${stack.tenantB.id}`), {
      headers: bearer(stack.tenantA.liveKey),
    })
    expect(query.status).toBe(403)
    expect((await errorOf(query)).param).toBe('tenantId')
  })

  it('accepts the matching tenant header', async () => {
    const res = await fetch(url('/svc/memories'), {
      headers: bearer(stack.tenantA.liveKey, { 'x-svc-tenant': stack.tenantA.id }),
    })
    expect(res.status).toBe(200)
  })

  it("keeps one tenant's memories invisible to another", async () => {
    const secret = `tenant-a-secret-${crypto.randomUUID()}`
    const created = await fetch(url('/svc/memories'), {
      method: 'POST',
      headers: bearer(stack.tenantA.liveKey, { 'content-type': 'application/json' }),
      body: JSON.stringify({ content: secret }),
    })
    expect(created.status).toBe(200)

    const listB = (await (
      await fetch(url('/svc/memories'), { headers: bearer(stack.tenantB.liveKey) })
    ).json()) as {
      data: { content: string }[]
    }
    expect(listB.data.map((m) => m.content)).not.toContain(secret)
    const searchB = (await (
      await fetch(url('/svc/memories/search'), {
        method: 'POST',
        headers: bearer(stack.tenantB.liveKey, { 'content-type': 'application/json' }),
        body: JSON.stringify({ query: secret, k: 100 }),
      })
    ).json()) as { data: unknown[] }
    expect(searchB.data).toHaveLength(0)

    const searchA = (await (
      await fetch(url('/svc/memories/search'), {
        method: 'POST',
        headers: bearer(stack.tenantA.liveKey, { 'content-type': 'application/json' }),
        body: JSON.stringify({ query: secret }),
      })
    ).json()) as { data: { content: string }[] }
    expect(searchA.data.map((m) => m.content)).toContain(secret)
  })

  it('keeps personal memories personal: another key of the same tenant does not see them', async () => {
    const secret = `live-key-only-${crypto.randomUUID()}`
    await fetch(url('/svc/memories'), {
      method: 'POST',
      headers: bearer(stack.tenantA.liveKey, { 'content-type': 'application/json' }),
      body: JSON.stringify({ text: secret }),
    })
    const other = (await (
      await fetch(url('/svc/memories'), { headers: bearer(stack.tenantA.testKey) })
    ).json()) as {
      data: { content: string }[]
    }
    expect(other.data.map((m) => m.content)).not.toContain(secret)
  })
})

describe(`request handling (${stack.kind})`, () => {
  it('echoes a valid inbound request id and replaces an invalid one', async () => {
    const echoed = await fetch(url('/svc/models'), { headers: { 'x-request-id': 'client-trace-42' } })
    expect(echoed.headers.get('x-request-id')).toBe('client-trace-42')
    const replaced = await fetch(url('/svc/models'), { headers: { 'x-request-id': 'bad id with spaces' } })
    expect(replaced.headers.get('x-request-id')).toMatch(/^req_/)
    const onError = await fetch(url('/svc/memories'), { headers: { 'x-request-id': 'trace-on-401' } })
    expect(onError.headers.get('x-request-id')).toBe('trace-on-401')
  })

  it('answers malformed JSON with 400 naming the problem', async () => {
    const res = await fetch(url('/svc/feedback'), {
      method: 'POST',
      headers: bearer(stack.tenantA.liveKey, { 'content-type': 'application/json' }),
      body: '{"rating": 5,',
    })
    expect(res.status).toBe(400)
    const err = await errorOf(res)
    expect(err.code).toBe('malformed_json')
    expect(err.message).toMatch(/not valid JSON/)
  })

  it('answers a schema violation with 400 naming the field and the rule', async () => {
    const res = await fetch(url('/svc/memories/search'), {
      method: 'POST',
      headers: bearer(stack.tenantA.liveKey, { 'content-type': 'application/json' }),
      body: JSON.stringify({ query: 'x', k: 500 }),
    })
    expect(res.status).toBe(400)
    const err = await errorOf(res)
    expect(err.param).toBe('k')
    expect(err.message).toBe('k must be <= 100 (got 500)')
  })

  it('answers a wrong content type with 415 and an oversized body with 413', async () => {
    const wrongType = await fetch(url('/svc/feedback'), {
      method: 'POST',
      headers: bearer(stack.tenantA.liveKey, { 'content-type': 'text/plain' }),
      body: 'hello',
    })
    expect(wrongType.status).toBe(415)
    const big = await fetch(url('/svc/feedback'), {
      method: 'POST',
      headers: bearer(stack.tenantA.liveKey, { 'content-type': 'application/json' }),
      body: JSON.stringify({ text: 'x'.repeat(70 * 1024) }),
    })
    expect(big.status).toBe(413)
    expect((await errorOf(big)).code).toBe('request_too_large')
  })

  it('answers 404 for unknown paths and 405 with Allow for known paths, once authenticated', async () => {
    const missing = await fetch(url('/svc/nothing-here'), { headers: bearer(stack.tenantA.liveKey) })
    expect(missing.status).toBe(404)
    expect((await errorOf(missing)).type).toBe('not_found_error')
    const wrongMethod = await fetch(url('/svc/chat/completions'), { headers: bearer(stack.tenantA.liveKey) })
    expect(wrongMethod.status).toBe(405)
    expect(wrongMethod.headers.get('allow')).toBe('POST, OPTIONS')
  })

  it('stores feedback and returns a receipt', async () => {
    const res = await fetch(url('/svc/feedback'), {
      method: 'POST',
      headers: bearer(stack.tenantA.liveKey, { 'content-type': 'application/json' }),
      body: JSON.stringify({ rating: 5, comment: 'fast' }),
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ object: 'feedback', status: 'accepted' })
  })

  it('answers CORS preflights with the OpenAI SDK headers allowed', async () => {
    const res = await fetch(url('/svc/chat/completions'), {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers':
          'authorization, content-type, x-stainless-os, x-stainless-retry-count, x-evil',
      },
    })
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    const allowed = res.headers.get('access-control-allow-headers')!.split(', ')
    expect(allowed).toEqual(['authorization', 'content-type', 'x-stainless-os', 'x-stainless-retry-count'])
    const actual = await fetch(url('/svc/models'), { headers: { origin: 'https://app.example' } })
    expect(actual.headers.get('access-control-allow-origin')).toBe('*')
    expect(actual.headers.get('access-control-expose-headers')).toContain('x-request-id')
  })
})
