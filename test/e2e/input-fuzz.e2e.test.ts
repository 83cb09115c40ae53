/**
 * Hostile input over every JSON route of the route table (enumerated from shared/routing, not
 * listed here) and every path parameter: nesting beyond the depth limit, NUL, lone surrogates,
 * invalid UTF-8, numbers JSON cannot carry, prototype keys, malformed percent-encoding. Each is
 * placed at several spots of a body (seeded, so a failure replays) and must be refused by the
 * gateway with a 4xx in the OpenAI error shape, before any family sees it (so unreleased routes,
 * which answer 501 to valid input, refuse it too). Afterwards the stack must still serve a login
 * and a chat completion.
 */
import { describe, expect, it } from 'vitest'
import { MAX_JSON_DEPTH } from '../../shared/http/json-input.ts'
import { ROUTES, type RouteSpec } from '../../shared/routing/route-table.ts'
import { fileStack } from './file-stack.ts'

const stack = await fileStack({ login: true })
const url = (p: string) => `${stack.baseUrl}${p}`

const jsonRoutes = ROUTES.filter((r) => r.body?.kind === 'json')
const parametrised = ROUTES.filter((r) => r.path.includes('/:'))

/** A hostile piece of JSON text, the error code the gateway answers it with, and how it is placed. */
interface Hostile {
  name: string
  /** JSON text of a value, or of a member `"key":value` when `member` is set. */
  text: string
  member?: boolean
  code: string
}

const nestedObject = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels)
const nestedArray = (levels: number) => '['.repeat(levels) + ']'.repeat(levels)

const HOSTILE: Hostile[] = [
  {
    name: `objects nested ${MAX_JSON_DEPTH + 1} deep`,
    text: nestedObject(MAX_JSON_DEPTH + 1),
    code: 'json_too_deep',
  },
  { name: 'arrays nested 10,000 deep', text: nestedArray(10_000), code: 'json_too_deep' },
  { name: 'NUL', text: '"a\\u0000b"', code: 'invalid_character' },
  { name: 'NUL in a field name', text: '"k\\u0000":1', member: true, code: 'invalid_character' },
  { name: 'lone high surrogate', text: '"\\ud800"', code: 'invalid_character' },
  { name: 'high surrogate without its pair', text: '"x\\uDBFFy"', code: 'invalid_character' },
  { name: 'lone low surrogate', text: '"\\udc00"', code: 'invalid_character' },
  { name: 'lone surrogate in a field name', text: '"\\ude00":1', member: true, code: 'invalid_character' },
  { name: '1e400', text: '1e400', code: 'number_out_of_range' },
  { name: '-1e400', text: '-1e400', code: 'number_out_of_range' },
  {
    name: '123456789012345678901234567890',
    text: '123456789012345678901234567890',
    code: 'number_out_of_range',
  },
  { name: '__proto__', text: '"__proto__":{"polluted":true}', member: true, code: 'reserved_field_name' },
  {
    name: 'constructor',
    text: '"constructor":{"prototype":{"polluted":true}}',
    member: true,
    code: 'reserved_field_name',
  },
  { name: 'prototype', text: '"prototype":1', member: true, code: 'reserved_field_name' },
  { name: 'escaped __proto__', text: '"\\u005f_proto__":1', member: true, code: 'reserved_field_name' },
]

/** Deterministic pseudo-random numbers (mulberry32), so a failing case replays exactly. */
function random(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const FIELD_NAMES = ['messages', 'content', 'input', 'metadata', 'query', 'tags', 'params', 'x']

/**
 * The hostile text at a spot of an otherwise plain body: at the top, inside an array, or a few
 * levels down in objects and arrays (never so deep that the depth limit alone would refuse it).
 */
function bodyWith(hostile: Hostile, placement: number, next: () => number): string {
  const field = () => FIELD_NAMES[Math.floor(next() * FIELD_NAMES.length)]!
  const member = hostile.member ? hostile.text : `"${field()}":${hostile.text}`
  const value = hostile.member ? `{${hostile.text}}` : hostile.text
  if (placement === 0) return `{"model":"svc-cell",${member}}`
  if (placement === 1) return `{"${field()}":["ok",${value},3]}`
  let text = value
  const levels = 1 + Math.floor(next() * 5)
  for (let i = 0; i < levels; i++) text = next() < 0.5 ? `[1,${text}]` : `{"${field()}":${text},"n":${i}}`
  return `{"model":"svc-cell","${field()}":${text}}`
}

function concretePath(route: RouteSpec, parameter = '5b0c6b8e-3f2a-4c1d-9e7f-0a1b2c3d4e5f'): string {
  return route.path.replace(/:[A-Za-z]+/g, parameter)
}

const headersFor = (route: RouteSpec): Record<string, string> =>
  route.access === 'credential' ? { authorization: `Bearer ${stack.tenantA.testKey}` } : {}

async function refusedInOpenAIShape(res: Response, label: string): Promise<{ code: string; param: unknown }> {
  const text = await res.text()
  expect(res.status, `${label}: ${text.slice(0, 300)}`).toBeGreaterThanOrEqual(400)
  expect(res.status, `${label}: ${text.slice(0, 300)}`).toBeLessThan(500)
  const body = JSON.parse(text) as { error: Record<string, unknown> }
  expect(Object.keys(body), label).toEqual(['error'])
  expect(Object.keys(body.error).sort(), label).toEqual(['code', 'message', 'param', 'type'])
  expect(typeof body.error.message, label).toBe('string')
  expect(typeof body.error.type, label).toBe('string')
  expect(typeof body.error.code, label).toBe('string')
  expect(res.headers.get('content-type'), label).toContain('application/json')
  expect(res.headers.get('x-request-id'), label).toBeTruthy()
  return { code: body.error.code as string, param: body.error.param }
}

describe(`hostile input over every JSON route (${stack.kind})`, () => {
  it('enumerates the JSON routes and path parameters from the route table', () => {
    expect(jsonRoutes.length).toBeGreaterThanOrEqual(15)
    expect(jsonRoutes.map((r) => r.path)).toContain('/svc/chat/completions')
    expect(jsonRoutes.map((r) => r.path)).toContain('/auth/login')
    expect(parametrised.length).toBeGreaterThanOrEqual(6)
  })

  for (const route of jsonRoutes) {
    it(`${route.method} ${route.path}: every hostile value, wherever it is, is a 400 from the gateway`, async () => {
      const next = random([...route.path].reduce((h, c) => (h * 31 + c.charCodeAt(0)) | 0, 7))
      for (const hostile of HOSTILE) {
        for (const placement of [0, 1, 2, 2]) {
          const body = bodyWith(hostile, placement, next)
          const res = await fetch(url(concretePath(route)), {
            method: route.method,
            headers: { 'content-type': 'application/json', ...headersFor(route) },
            body,
          })
          const label = `${route.method} ${route.path} ${hostile.name} in ${body.slice(0, 120)}`
          const error = await refusedInOpenAIShape(res, label)
          expect(res.status, label).toBe(400)
          expect(error.code, label).toBe(hostile.code)
        }
      }
    })

    it(`${route.method} ${route.path}: invalid UTF-8 bytes are a 400 invalid_utf8`, async () => {
      const encoder = new TextEncoder()
      for (const bytes of [[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xc0, 0xaf]]) {
        const body = new Uint8Array([...encoder.encode('{"content":"a'), ...bytes, ...encoder.encode('b"}')])
        const res = await fetch(url(concretePath(route)), {
          method: route.method,
          headers: { 'content-type': 'application/json', ...headersFor(route) },
          body,
        })
        const label = `${route.method} ${route.path} bytes ${bytes.map((b) => b.toString(16)).join(' ')}`
        const error = await refusedInOpenAIShape(res, label)
        expect(res.status, label).toBe(400)
        expect(error.code, label).toBe('invalid_utf8')
      }
    })
  }

  for (const route of parametrised) {
    it(`${route.method} ${route.path}: malformed percent-encoding in the path parameter is a 400`, async () => {
      for (const bad of ['%ZZ', '%', '%G1', '%E0%A4', '%C3%28', '%ED%A0%80', '%F4%90%80%80', 'a%00b']) {
        for (const headers of [{}, headersFor(route)]) {
          const res = await fetch(url(concretePath(route, bad)), {
            method: route.method,
            headers: route.body ? { 'content-type': 'application/json', ...headers } : headers,
            ...(route.body ? { body: '{}' } : {}),
          })
          const label = `${route.method} ${concretePath(route, bad)} ${Object.keys(headers).length ? 'with' : 'without'} a credential`
          const error = await refusedInOpenAIShape(res, label)
          expect(res.status, label).toBe(400)
          expect(error.code, label).toBe('malformed_path')
        }
      }
    })
  }

  it('leaves a healthy stack: a login and a chat completion with the test key succeed', async () => {
    const { ownerEmail, ownerPassword } = stack.tenantA
    const login = await fetch(url('/auth/login'), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'cf-connecting-ip': `2001:db8::${crypto.randomUUID().slice(0, 4)}`,
      },
      body: JSON.stringify({ email: ownerEmail, password: ownerPassword }),
    })
    expect(login.status, await login.clone().text()).toBe(200)
    expect(((await login.json()) as { access_token: string }).access_token).toBeTruthy()

    const chat = await fetch(url('/svc/chat/completions'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.tenantA.testKey}` },
      body: JSON.stringify({ model: 'svc-cell', messages: [{ role: 'user', content: 'Still there?' }] }),
    })
    expect(chat.status, await chat.clone().text()).toBe(200)
    const completion = (await chat.json()) as { object: string; choices: { message: { content: string } }[] }
    expect(completion.object).toBe('chat.completion')
    expect(completion.choices[0]!.message.content.length).toBeGreaterThan(0)
  })
})
