import { createRoute } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { MODEL_CATALOG, renderModelList, renderRouterCatalog } from '../../../shared/catalog/model-catalog'
import { createFamilyApp } from '../../../shared/worker/family-app'
import { ModelListSchema, RouterCatalogSchema } from './models.schemas'

// Rendered once per isolate: serving the catalog costs no parse or stringify per request.
const MODEL_LIST_BODY = JSON.stringify(renderModelList())
const ROUTER_CATALOG_BODY = JSON.stringify(renderRouterCatalog())
const ETAG = `"catalog-${MODEL_CATALOG.version}"`

const CATALOG_HEADERS = {
  'content-type': 'application/json',
  'cache-control': 'public, max-age=300',
  etag: ETAG,
}

export const modelsApp = createFamilyApp<object>()
/** The catalog body, or 304 when the client already holds this version. */
function catalog(body: string) {
  return (c: Context) =>
    c.req.header('if-none-match') === ETAG
      ? c.body(null, 304, CATALOG_HEADERS)
      : c.body(body, 200, CATALOG_HEADERS)
}

modelsApp.openAPIRegistry.registerPath(
  createRoute({
    method: 'get',
    path: '/svc/models',
    tags: ['Models'],
    summary: 'List model aliases and their immutable dated snapshots (public)',
    responses: {
      200: { description: 'Model list', content: { 'application/json': { schema: ModelListSchema } } },
    },
  }),
)
modelsApp.get('/svc/models', catalog(MODEL_LIST_BODY))

modelsApp.openAPIRegistry.registerPath(
  createRoute({
    method: 'get',
    path: '/svc/router/models',
    tags: ['Models'],
    summary:
      'Provider-facing catalog: prices, modalities, features, capacity, datacenters, launch state (public)',
    responses: {
      200: {
        description: 'Router catalog',
        content: { 'application/json': { schema: RouterCatalogSchema } },
      },
    },
  }),
)
modelsApp.get('/svc/router/models', catalog(ROUTER_CATALOG_BODY))
