/**
 * GET /openapi.json (the document of openapi-document.ts, cached per isolate) and the interactive
 * reference page rendered from the same document.
 */
import SCALAR_SCRIPT from '@scalar/api-reference/browser/standalone.js?raw'
import { Scalar } from '@scalar/hono-api-reference'
import { Hono } from 'hono'
import type { GatewayApp, GatewayEnv } from './gateway.context'
import { composeOpenApi } from './openapi-document'

/**
 * The interactive reference (Scalar's Hono middleware), rendered in the browser from /openapi.json.
 * Its script is bundled into this worker and served from /docs/scalar.js; the page's CSP allows
 * nothing but this origin, so reading the reference makes no request anywhere else.
 */
const REFERENCE_CSP = [
  "default-src 'self'",
  "script-src 'self' 'unsafe-inline'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
].join('; ')

const referencePage = Scalar<GatewayApp>({
  url: '/openapi.json',
  cdn: '/docs/scalar.js',
  pageTitle: 'svc API reference',
  withDefaultFonts: false,
  hideClientButton: true,
})

export const docsRoutes = new Hono<GatewayApp>()

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

docsRoutes.get('/openapi.json', async (c) => c.json(await documentFor(c.env, c.get('baseUrl'))))
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
