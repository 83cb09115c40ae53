import { createRoute } from '@hono/zod-openapi'
import { MODEL_CATALOG, renderModelList, renderRouterCatalog } from '../../../shared/catalog/model-catalog'
import { type DirectHandler, DirectRoutes } from '../../../shared/worker/direct-routes'
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
/** Both catalogs are direct routes: no Request or Response is built for the gateway's call. */
export const modelsDirectRoutes = new DirectRoutes()

/** The catalog body, or 304 when the client already holds this version. */
function catalog(body: string): DirectHandler {
  return ({ header }) =>
    header('if-none-match') === ETAG
      ? { status: 304, headers: CATALOG_HEADERS, body: null }
      : { status: 200, headers: CATALOG_HEADERS, body }
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
modelsDirectRoutes.get(modelsApp, '/svc/models', catalog(MODEL_LIST_BODY))

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
modelsDirectRoutes.get(modelsApp, '/svc/router/models', catalog(ROUTER_CATALOG_BODY))
