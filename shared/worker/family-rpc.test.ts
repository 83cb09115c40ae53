import { describe, expect, it } from 'vitest'
import { fromFamilyResponse, headerMap, toFamilyResponse, toRequest } from './family-rpc'
import type { RequestContext } from './request-context'

const context: RequestContext = {
  requestId: 'req_1',
  identity: null,
  maxBodyBytes: 1024,
  baseUrl: 'https://svc.test',
}

describe('family RPC transport: what crosses the service binding', () => {
  it('JSON and other text bodies cross as text, with status and every header', async () => {
    const res = new Response('{"ok":true}', {
      status: 201,
      headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'req_1' },
    })
    const out = await toFamilyResponse(res)
    expect(out).toEqual({
      status: 201,
      headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'req_1' },
      body: '{"ok":true}',
    })
    const html = await toFamilyResponse(new Response('<p>', { headers: { 'content-type': 'text/html' } }))
    expect(html.body).toBe('<p>')
  })

  it('server-sent events and NDJSON cross as the stream itself, so chunks are relayed as they come', async () => {
    for (const type of ['text/event-stream; charset=utf-8', 'application/x-ndjson']) {
      const stream = new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(new TextEncoder().encode('data: 1\n\n'))
          c.close()
        },
      })
      const out = await toFamilyResponse(new Response(stream, { headers: { 'content-type': type } }))
      expect(out.body).toBeInstanceOf(ReadableStream)
      expect(await new Response(out.body).text()).toBe('data: 1\n\n')
    }
  })

  it('headers cross as one plain object, Set-Cookie values apart, and one can be left out', () => {
    const headers = new Headers({ authorization: 'Bearer x', accept: 'application/json' })
    headers.append('set-cookie', 'a=1')
    headers.append('set-cookie', 'b=2')
    expect(headerMap(headers, 'authorization')).toEqual({
      headers: { accept: 'application/json' },
      setCookies: ['a=1', 'b=2'],
    })
  })

  it('binary bodies cross as bytes; bodiless statuses as null', async () => {
    const bytes = await toFamilyResponse(
      new Response(new Uint8Array([1, 2, 3]), { headers: { 'content-type': 'application/octet-stream' } }),
    )
    expect(new Uint8Array(bytes.body as ArrayBuffer)).toEqual(new Uint8Array([1, 2, 3]))
    expect((await toFamilyResponse(new Response(null, { status: 204 }))).body).toBeNull()
  })

  it('the gateway rebuilds the response with its own headers appended', async () => {
    const res = fromFamilyResponse(
      { status: 429, headers: { 'retry-after': '3' }, body: '{"error":{}}' },
      { 'access-control-allow-origin': '*' },
    )
    expect(res.status).toBe(429)
    expect(res.headers.get('retry-after')).toBe('3')
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    expect(await res.text()).toBe('{"error":{}}')
    expect(fromFamilyResponse({ status: 304, headers: {}, body: '' }, null).body).toBeNull()
    const cookies = fromFamilyResponse(
      { status: 200, headers: { 'content-type': 'text/plain' }, setCookies: ['a=1', 'b=2'], body: 'x' },
      null,
    )
    expect(cookies.headers.getSetCookie()).toEqual(['a=1', 'b=2'])
  })

  it('the family sees the forwarded request: method, URL, headers and body (none on GET)', async () => {
    const post = toRequest({
      method: 'POST',
      url: 'https://svc.test/svc/chat/completions?x=1',
      path: '/svc/chat/completions',
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
      context,
    })
    expect(post.method).toBe('POST')
    expect(new URL(post.url).search).toBe('?x=1')
    expect(post.headers.get('content-type')).toBe('application/json')
    expect(await post.text()).toBe('{"a":1}')
    const get = toRequest({
      method: 'GET',
      url: 'https://svc.test/svc/models',
      path: '/svc/models',
      headers: {},
      body: 'x',
      context,
    })
    expect(get.body).toBeNull()
  })
})
