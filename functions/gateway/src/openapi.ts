/**
 * The OpenAPI 3.1 document, composed from the families' own zod-generated documents (each
 * family describes the routes it validates) plus the gateway's, cached per isolate; and a
 * human-readable reference page rendered from the same document.
 */
import { Hono } from 'hono'
import { FAMILIES, FAMILY_BINDING } from '../../../shared/routing/route-table'
import type { GatewayApp, GatewayEnv } from './gateway.context'

export const API_VERSION = '2026-08-04'

interface OpenApiPart {
  paths?: Record<string, Record<string, unknown>>
  components?: Record<string, Record<string, unknown>>
}

const GATEWAY_PATHS = {
  '/healthz': {
    get: {
      tags: ['Operations'],
      summary: 'Liveness (public)',
      responses: { 200: { description: 'The gateway is running' } },
    },
  },
  '/readyz': {
    get: {
      tags: ['Operations'],
      summary: 'Readiness: touches the database (public)',
      responses: { 200: { description: 'Ready' }, 503: { description: 'A dependency is unavailable' } },
    },
  },
  '/openapi.json': {
    get: {
      tags: ['Operations'],
      summary: 'This document (public)',
      responses: { 200: { description: 'OpenAPI 3.1' } },
    },
  },
  '/docs': {
    get: {
      tags: ['Operations'],
      summary: 'Human-readable API reference (public)',
      responses: { 200: { description: 'HTML' } },
    },
  },
}

const ERROR_SCHEMA = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['message', 'type', 'param', 'code'],
      properties: {
        message: { type: 'string' },
        type: { type: 'string' },
        param: { type: ['string', 'null'] },
        code: { type: 'string' },
      },
    },
  },
}

let cached: Promise<Record<string, unknown>> | null = null

export async function composeOpenApi(env: GatewayEnv, baseUrl: string): Promise<Record<string, unknown>> {
  const parts = (await Promise.all(FAMILIES.map((f) => env[FAMILY_BINDING[f]].openapi()))) as OpenApiPart[]
  const paths: Record<string, Record<string, unknown>> = { ...GATEWAY_PATHS }
  const components: Record<string, Record<string, unknown>> = {
    schemas: { Error: ERROR_SCHEMA },
    securitySchemes: {},
  }
  for (const part of parts) {
    for (const [path, ops] of Object.entries(part.paths ?? {})) paths[path] = { ...paths[path], ...ops }
    for (const [kind, entries] of Object.entries(part.components ?? {})) {
      components[kind] = { ...components[kind], ...entries }
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc API',
      version: API_VERSION,
      description:
        'Model and agent API (chat completions, agent turns and runs, search, transcription, knowledge, reasoning jobs, MCP) and platform API (tokens, telemetry, crypto policy). Errors use {"error":{"message","type","param","code"}}.',
    },
    servers: [{ url: baseUrl }],
    security: [{ bearer: [] }],
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components,
  }
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"]/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[ch]!)
}

export function renderReference(doc: Record<string, unknown>): string {
  const paths = doc.paths as Record<
    string,
    Record<string, { summary?: string; description?: string; tags?: string[] }>
  >
  const rows: string[] = []
  for (const [path, ops] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(ops)) {
      rows.push(
        `<tr><td><code>${method.toUpperCase()}</code></td><td><code>${escapeHtml(path)}</code></td><td>${escapeHtml(op.tags?.join(', ') ?? '')}</td><td>${escapeHtml(op.summary ?? '')}${op.description ? `<br><small>${escapeHtml(op.description)}</small>` : ''}</td></tr>`,
      )
    }
  }
  const info = doc.info as { title: string; version: string; description: string }
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(info.title)} reference</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:1100px;margin:2rem auto;padding:0 1rem}table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left;vertical-align:top}code{font-size:13px}</style></head>
<body><h1>${escapeHtml(info.title)} <small>${escapeHtml(info.version)}</small></h1><p>${escapeHtml(info.description)}</p>
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1, generated from the same zod schemas the routes validate with).</p>
<table><thead><tr><th>Method</th><th>Path</th><th>Family</th><th>Summary</th></tr></thead><tbody>${rows.join('')}</tbody></table></body></html>`
}

export const docsRoutes = new Hono<GatewayApp>()

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
docsRoutes.get('/docs', async (c) => c.html(renderReference(await documentFor(c.env, c.get('baseUrl')))))
