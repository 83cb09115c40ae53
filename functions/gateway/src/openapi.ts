/**
 * GET /openapi.json: the document of openapi-document.ts, composed from every family's part and
 * cached per isolate. The interactive reference page rendered from it (/docs) is the console
 * worker's (functions/console/src/docs-reference.ts).
 */
import { Hono } from 'hono'
import type { GatewayApp, GatewayEnv } from './gateway.context'
import { composeOpenApi } from './openapi-document'

export const openApiRoutes = new Hono<GatewayApp>()

let cached: Promise<Record<string, unknown>> | null = null

function documentFor(env: GatewayEnv, baseUrl: string): Promise<Record<string, unknown>> {
  if (!cached) {
    cached = composeOpenApi(env, baseUrl).catch((err) => {
      cached = null
      throw err
    })
  }
  return cached.then((doc) => ({ ...doc, servers: [{ url: baseUrl }] }))
}

openApiRoutes.get('/openapi.json', async (c) => c.json(await documentFor(c.env, c.get('baseUrl'))))
