import { describe, expect, inject, it } from 'vitest'

const stack = inject('stack')
const url = (p: string) => `${stack.baseUrl}${p}`

describe(`public endpoints (${stack.kind})`, () => {
  it('lists the six aliases with their dated snapshots in the OpenAI list shape', async () => {
    const res = await fetch(url('/svc/models'))
    expect(res.status).toBe(200)
    expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/)
    const body = (await res.json()) as {
      object: string
      data: { id: string; object: string; created: number; owned_by: string }[]
      aliases: Record<string, string>
    }
    expect(body.object).toBe('list')
    const ids = body.data.map((m) => m.id)
    for (const alias of ['svc-cell', 'svc-brood', 'svc-comb', 'svc-buzz', 'svc-hive', 'svc-swarm']) {
      expect(ids).toContain(alias)
      expect(ids).toContain(body.aliases[alias])
      expect(body.aliases[alias]).toMatch(new RegExp(`^${alias}-\\d{4}-\\d{2}-\\d{2}$`))
    }
    for (const m of body.data) {
      expect(m.object).toBe('model')
      expect(Number.isInteger(m.created)).toBe(true)
      expect(m.owned_by).toBe('svc')
    }
  })

  it('answers a conditional catalog request with 304', async () => {
    const first = await fetch(url('/svc/models'))
    const etag = first.headers.get('etag')!
    const second = await fetch(url('/svc/models'), { headers: { 'if-none-match': etag } })
    expect(second.status).toBe(304)
  })

  it('publishes the provider-facing catalog with prices, features, datacenters and launch state', async () => {
    const res = await fetch(url('/svc/router/models'))
    expect(res.status).toBe(200)
    const body = (await res.json()) as { data: Record<string, unknown>[] }
    expect(body.data).toHaveLength(6)
    for (const m of body.data) {
      const pricing = m.pricing as Record<string, unknown>
      for (const key of ['prompt', 'completion', 'input_cache_read'])
        expect(pricing[key]).toMatch(/^\d+(\.\d+)?$/)
      expect(['staged', 'ready']).toContain(m.launch_state)
      expect(m.is_ready).toBe(m.launch_state === 'ready')
      expect((m.datacenters as { country_code: string }[])[0]!.country_code).toMatch(/^[A-Z]{2}$/)
      expect(m.context_length).toBeGreaterThan(0)
      expect(Array.isArray(m.supported_features)).toBe(true)
    }
  })

  it.each([
    ['/oauth/protected-resource', '/mcp'],
    ['/.well-known/oauth-protected-resource/mcp', '/mcp'],
    ['/.well-known/oauth-protected-resource', ''],
  ])('serves RFC 9728 metadata at %s with a matching resource', async (path, resource) => {
    const res = await fetch(url(path))
    expect(res.status).toBe(200)
    const body = (await res.json()) as Record<string, unknown>
    expect(body.resource).toBe(`${stack.baseUrl}${resource}`)
    expect(body.bearer_methods_supported).toEqual(['header'])
    expect((body.authorization_servers as string[]).length).toBeGreaterThan(0)
    expect(body.scopes_supported).toContain('mcp:tools')
  })

  it('reports liveness and readiness (readiness touches the database)', async () => {
    expect((await fetch(url('/healthz'))).status).toBe(200)
    const ready = await fetch(url('/readyz'))
    expect(ready.status).toBe(200)
    expect(await ready.json()).toMatchObject({ status: 'ready', checks: { database: { status: 'ok' } } })
  })

  it('serves an OpenAPI 3.1 document at the interface version, and a reference page', async () => {
    const doc = (await (await fetch(url('/openapi.json'))).json()) as {
      openapi: string
      info: { version: string }
      paths: Record<string, Record<string, unknown>>
    }
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.info.version).toBe('2026-08-04')
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/svc/models', '/svc/memories', '/svc/feedback']),
    )
    expect(doc.paths['/svc/memories/search']?.post).toBeDefined()
    const page = await fetch(url('/docs'))
    expect(page.headers.get('content-type')).toContain('text/html')
    // Scalar's reference renders the document in the browser: the page names where it is.
    expect(await page.text()).toContain('/openapi.json')
  })

  it('answers 405 with Allow on a public path with the wrong method, without asking for a credential', async () => {
    const res = await fetch(url('/svc/models'), { method: 'POST' })
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toContain('GET')
  })
})
