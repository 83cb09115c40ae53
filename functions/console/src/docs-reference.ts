/**
 * GET /docs: the interactive API reference (Scalar's Hono middleware), rendered in the browser from
 * the gateway's /openapi.json. Its script is bundled into this worker (`?raw` import,
 * scripts/workers.ts) and served from /docs/scalar.js; the page's CSP allows nothing but this
 * origin, so reading the reference makes no request anywhere else. It lives here rather than in
 * the gateway because the script is 3.5 MB that no API request needs.
 */
import { createRoute, OpenAPIHono } from '@hono/zod-openapi'
import SCALAR_SCRIPT from '@scalar/api-reference/browser/standalone.js?raw'
import { Scalar } from '@scalar/hono-api-reference'
import { Hono } from 'hono'
import type { ConsoleApp } from './console.context'

const REFERENCE_CSP = [
  "default-src 'self'",
  "script-src 'self' 'unsafe-inline'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
].join('; ')

const referencePage = Scalar<ConsoleApp>({
  url: '/openapi.json',
  cdn: '/docs/scalar.js',
  pageTitle: 'svc API reference',
  withDefaultFonts: false,
  hideClientButton: true,
})

export const docsRoutes = new Hono<ConsoleApp>()

docsRoutes.get('/docs', async (c, next) => {
  c.header('content-security-policy', REFERENCE_CSP)
  return referencePage(c, next)
})
docsRoutes.get('/docs/scalar.js', (c) =>
  c.body(SCALAR_SCRIPT, 200, {
    'content-type': 'text/javascript; charset=utf-8',
    'cache-control': 'public, max-age=86400',
  }),
)

/** The console's part of the OpenAPI document: the reference page (the gateway merges every part). */
export function docsOpenApiPart(config: {
  openapi: string
  info: { title: string; version: string }
}): unknown {
  const described = new OpenAPIHono()
  described.openAPIRegistry.registerPath(
    createRoute({
      method: 'get',
      path: '/docs',
      operationId: 'getApiReference',
      tags: ['Operations'],
      summary: 'Human-readable API reference (public)',
      security: [],
      responses: { 200: { description: 'HTML' } },
    }),
  )
  return described.getOpenAPI31Document(config)
}
