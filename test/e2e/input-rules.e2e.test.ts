/**
 * The gateway's input rules, end to end: JSON nesting depth, NUL and lone surrogates, strict UTF-8,
 * malformed percent-encoding in paths, and every way of naming a tenant. Each refusal is a 4xx in
 * the OpenAI error shape naming the field, and the database stays healthy afterwards.
 */
import { describe, expect, it } from 'vitest'
import { ROUTES } from '../../shared/routing/route-table.ts'
import { fileStack } from './file-stack.ts'

const stack = await fileStack()
const url = (p: string) => `${stack.baseUrl}${p}`
const key = stack.tenantA.testKey

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string }
}

async function errorOf(res: Response): Promise<ErrorBody['error']> {
  const body = (await res.json()) as ErrorBody
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type'])
  return body.error
}

function post(path: string, body: string | Uint8Array<ArrayBuffer>, headers: Record<string, string> = {}) {
  return fetch(url(path), {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body,
  })
}

const nested = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels)

async function memoriesStillWork(): Promise<void> {
  const note = `still here ${crypto.randomUUID()}`
  const created = await post('/svc/memories', JSON.stringify({ content: note }))
  expect(created.status, await created.clone().text()).toBe(200)
  const list = await fetch(url('/svc/memories?limit=5'), { headers: { authorization: `Bearer ${key}` } })
  expect(list.status).toBe(200)
  expect(((await list.json()) as { data: { content: string }[] }).data.map((m) => m.content)).toContain(note)
}

describe(`JSON nesting depth (${stack.kind})`, () => {
  it('refuses 8,000 nested levels (48 KB, under the 64 KiB limit) with 400 naming the limit', async () => {
    const body = `{"text":"m","z":${nested(8000)}}`
    expect(body.length).toBeLessThan(64 * 1024)
    const res = await post('/svc/memories', body)
    expect(res.status).toBe(400)
    const error = await errorOf(res)
    expect(error.code).toBe('json_too_deep')
    expect(error.message).toContain('nested deeper than 64 levels')
    expect(error.param?.startsWith('z.a.a')).toBe(true)
  })

  it('applies the same limit on the chat hot path and on public routes', async () => {
    const chat = await post(
      '/svc/chat/completions',
      `{"model":"svc-cell","messages":[{"role":"user","content":"hi"}],"metadata":${nested(100)}}`,
    )
    expect(chat.status).toBe(400)
    expect((await errorOf(chat)).code).toBe('json_too_deep')
    const login = await post('/auth/login', `{"email":${nested(65)},"password":"x"}`)
    expect(login.status).toBe(400)
    expect((await errorOf(login)).code).toBe('json_too_deep')
  })

  it('accepts 64 levels', async () => {
    const res = await post('/svc/memories', `{"text":"deep but allowed","z":${nested(62)}}`)
    expect(res.status, await res.clone().text()).toBe(200)
  })
})

describe(`NUL and lone surrogates (${stack.kind})`, () => {
  it('refuses a lone surrogate with 400 naming the field, then the database still answers', async () => {
    const res = await post('/svc/memories', '{"text":"m","z":"\\ud800"}')
    expect(res.status).toBe(400)
    expect(await errorOf(res)).toMatchObject({ code: 'invalid_character', param: 'z' })
    await memoriesStillWork()
  })

  it('refuses NUL, a lone low surrogate and a high one without its pair, wherever they are', async () => {
    const cases: [string, string, string][] = [
      ['/svc/memories', '{"content":"a\\u0000b"}', 'content'],
      ['/svc/memories', '{"content":"ok","tags":["x","\\udc01"]}', 'tags[1]'],
      ['/svc/memories/search', '{"query":"\\ud83d!"}', 'query'],
      [
        '/svc/chat/completions',
        '{"model":"svc-cell","messages":[{"role":"user","content":"\\u0000"}]}',
        'messages[0].content',
      ],
      ['/auth/login', '{"email":"owner@dev.localhost","password":"\\u0000"}', 'password'],
    ]
    for (const [path, body, param] of cases) {
      const res = await post(path, body)
      expect(res.status, `${path} ${body}`).toBe(400)
      expect(await errorOf(res)).toMatchObject({ code: 'invalid_character', param })
    }
    await memoriesStillWork()
  })

  it('stores a well-formed surrogate pair and escaped text as sent', async () => {
    const res = await post('/svc/memories', '{"content":"smile \\ud83d\\ude00 and \\\\u0000 literally"}')
    expect(res.status).toBe(200)
    expect(((await res.json()) as { content: string }).content).toBe('smile 😀 and \\u0000 literally')
  })
})

describe(`strict UTF-8 (${stack.kind})`, () => {
  const invalid = new Uint8Array([
    ...new TextEncoder().encode('{"content":"a'),
    0xff,
    0xc3,
    0x28,
    ...new TextEncoder().encode('b"}'),
  ])

  it('refuses invalid UTF-8 bytes with 400 instead of storing U+FFFD', async () => {
    const res = await post('/svc/memories', invalid)
    expect(res.status).toBe(400)
    const error = await errorOf(res)
    expect(error.code).toBe('invalid_utf8')
    expect(error.message).toContain('UTF-8')
  })

  it('refuses them in a chunked body too (no Content-Length)', async () => {
    const res = await fetch(url('/svc/memories'), {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(invalid.slice(0, 5))
          controller.enqueue(invalid.slice(5))
          controller.close()
        },
      }),
      duplex: 'half',
    } as RequestInit)
    expect(res.status).toBe(400)
    expect((await errorOf(res)).code).toBe('invalid_utf8')
  })

  it('keeps valid multi-byte text intact', async () => {
    const res = await post('/svc/memories', new TextEncoder().encode('{"content":"café ☕ 😀"}'))
    expect(res.status).toBe(200)
    expect(((await res.json()) as { content: string }).content).toBe('café ☕ 😀')
  })
})

describe(`percent-encoding in paths (${stack.kind})`, () => {
  const parametrised = ROUTES.filter((r) => r.path.includes('/:'))

  it('has parametrised routes to check', () => {
    expect(parametrised.length).toBeGreaterThanOrEqual(5)
  })

  for (const route of parametrised) {
    it(`${route.method} ${route.path}: malformed percent-encoding is a 400, with or without a credential`, async () => {
      for (const bad of ['%ZZ', '%', '%E0%A4', '%C3%28', '%00']) {
        const path = route.path.replace(/:[A-Za-z]+/g, bad)
        for (const headers of [{}, { authorization: `Bearer ${key}` }] as Record<string, string>[]) {
          const res = await fetch(url(path), { method: route.method, headers })
          expect(res.status, `${route.method} ${path}`).toBe(400)
          const error = await errorOf(res)
          expect(error.code).toBe('malformed_path')
          expect(res.headers.get('x-request-id')).toBeTruthy()
        }
      }
    })
  }

  it('decodes well-formed escapes as before', async () => {
    const res = await fetch(url('/svc/agents/runs/00000000-0000-4000-8000-00000000000%30'), {
      headers: { authorization: `Bearer ${key}` },
    })
    expect(res.status).toBe(404)
  })
})

describe(`naming a tenant (${stack.kind})`, () => {
  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(url(path), { headers: { authorization: `Bearer ${key}`, ...headers } })

  it('refuses x-tenant-id naming another tenant, exactly like x-svc-tenant', async () => {
    const res = await get('/svc/memories', { 'x-tenant-id': stack.tenantB.id })
    expect(res.status).toBe(403)
    expect(await errorOf(res)).toMatchObject({ code: 'tenant_mismatch', param: 'x-tenant-id' })
    expect((await get('/svc/memories', { 'x-tenant-id': stack.tenantA.id })).status).toBe(200)
  })

  it('refuses ?tenant_id= naming another tenant, exactly like ?tenantId=', async () => {
    const res = await get(`/svc/memories?tenant_id=${stack.tenantB.id}`)
    expect(res.status).toBe(403)
    expect(await errorOf(res)).toMatchObject({ code: 'tenant_mismatch', param: 'tenant_id' })
    expect((await get(`/svc/memories?tenant_id=${stack.tenantA.id}`)).status).toBe(200)
  })

  it('checks every value of a repeated name, not only the first', async () => {
    const res = await get(`/svc/memories?tenantId=${stack.tenantA.id}&tenantId=${stack.tenantB.id}`)
    expect(res.status).toBe(403)
    expect((await errorOf(res)).param).toBe('tenantId')
  })
})
