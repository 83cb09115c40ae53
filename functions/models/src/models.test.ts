/**
 * The models family as the gateway calls it: both public catalogs, their documented shapes,
 * the catalog's content and conditional requests.
 */
import { env } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { MODEL_CATALOG } from '../../../shared/catalog/model-catalog'
import { callFamily } from '../../../test/unit/family-call'
import ModelsWorker from './index'
import { ModelListSchema, RouterCatalogSchema } from './models.schemas'

const get = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
  callFamily(ModelsWorker, env, path, { method, headers })

describe('GET /svc/models', () => {
  it('lists every alias and every dated snapshot once, in the documented OpenAI list shape', async () => {
    const res = await get('/svc/models')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/json')
    const body = ModelListSchema.parse(await res.json())
    const ids = body.data.map((m) => m.id)
    expect(new Set(ids).size).toBe(ids.length)
    const expected = MODEL_CATALOG.models.flatMap((m) => [m.alias, ...m.snapshots.map((s) => s.id)])
    expect([...ids].sort()).toEqual([...expected].sort())
    expect(body.catalog_version).toBe(MODEL_CATALOG.version)
  })

  it('links each alias to its current snapshot both ways, and dates the alias as that snapshot', async () => {
    const body = ModelListSchema.parse(await (await get('/svc/models')).json())
    const byId = new Map(body.data.map((m) => [m.id, m]))
    for (const model of MODEL_CATALOG.models) {
      const alias = byId.get(model.alias)
      expect(alias?.snapshot).toBe(model.current_snapshot)
      expect(body.aliases[model.alias]).toBe(model.current_snapshot)
      const current = byId.get(model.current_snapshot)
      expect(current?.alias).toBe(model.alias)
      expect(alias?.created).toBe(current?.created)
      for (const snapshot of model.snapshots) expect(byId.get(snapshot.id)?.alias).toBe(model.alias)
    }
  })

  it('is cacheable and answers a request for the version the client holds with 304 and no body', async () => {
    const first = await get('/svc/models')
    const etag = first.headers.get('etag') ?? ''
    expect(etag).toContain(MODEL_CATALOG.version)
    expect(first.headers.get('cache-control')).toBe('public, max-age=300')
    const again = await get('/svc/models', { 'if-none-match': etag })
    expect(again.status).toBe(304)
    expect(again.headers.get('etag')).toBe(etag)
    expect(await again.text()).toBe('')
    const stale = await get('/svc/models', { 'if-none-match': '"catalog-1999-01-01"' })
    expect(stale.status).toBe(200)
    expect(ModelListSchema.safeParse(await stale.json()).success).toBe(true)
  })

  it('answers HEAD with the headers of GET and no body', async () => {
    const head = await get('/svc/models', {}, 'HEAD')
    expect(head.status).toBe(200)
    expect(head.headers.get('etag')).toBe((await get('/svc/models')).headers.get('etag'))
    expect(await head.text()).toBe('')
  })
})

describe('GET /svc/router/models', () => {
  it('publishes every alias with prices, capacity, datacenters and launch state from the catalog', async () => {
    const res = await get('/svc/router/models')
    expect(res.status).toBe(200)
    const body = RouterCatalogSchema.parse(await res.json())
    expect(body.catalog_version).toBe(MODEL_CATALOG.version)
    expect(body.data.map((m) => m.id)).toEqual(MODEL_CATALOG.models.map((m) => m.alias))
    for (const model of MODEL_CATALOG.models) {
      const entry = body.data.find((m) => m.id === model.alias)!
      expect(entry.pricing).toEqual(model.pricing)
      for (const price of Object.values(entry.pricing)) expect(price).toMatch(/^\d+(\.\d+)?$/)
      expect(entry.context_length).toBe(model.context_length)
      expect(entry.snapshots).toEqual(model.snapshots.map((s) => s.id))
      expect(entry.current_snapshot).toBe(model.current_snapshot)
      expect(entry.datacenters).toEqual(model.datacenters.map((country_code) => ({ country_code })))
      expect(entry.is_ready).toBe(model.launch_state === 'ready')
    }
  })

  it('shares the catalog ETag, so a client revalidates both catalogs with one version', async () => {
    const etag = (await get('/svc/models')).headers.get('etag') ?? ''
    const res = await get('/svc/router/models', { 'if-none-match': etag })
    expect(res.status).toBe(304)
  })
})

describe('the models family', () => {
  it('answers any other path with 404 and the request id', async () => {
    const res = await callFamily(ModelsWorker, env, '/svc/models/svc-cell', { requestId: 'req_models_1' })
    expect(res.status).toBe(404)
    expect(res.headers.get('x-request-id')).toBe('req_models_1')
  })
})
