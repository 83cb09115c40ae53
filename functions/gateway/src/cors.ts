/**
 * CORS for browser clients. Credentials are bearer tokens (no cookies), so any origin may be
 * allowed; `CORS_ALLOWED_ORIGINS` narrows it. Preflights reflect only the request headers we
 * accept, including the OpenAI SDK's `X-Stainless-*` family.
 */

const ALLOWED_HEADERS = new Set([
  'authorization',
  'content-type',
  'content-encoding',
  'accept',
  'x-request-id',
  'x-svc-tenant',
  'x-svc-mode',
  'x-svc-crypto-algorithms',
  'idempotency-key',
  'openai-organization',
  'openai-project',
  'openai-beta',
  'mcp-protocol-version',
  'mcp-session-id',
  'mcp-method',
  'mcp-name',
  'last-event-id',
])

export const EXPOSED_HEADERS = [
  'x-request-id',
  'retry-after',
  'x-should-retry',
  'x-ratelimit-limit-requests',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-reset-requests',
  'x-ratelimit-limit-tokens',
  'x-ratelimit-remaining-tokens',
  'x-ratelimit-reset-tokens',
  'mcp-session-id',
  'www-authenticate',
].join(', ')

const METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS'

function isAllowedHeader(name: string): boolean {
  const h = name.trim().toLowerCase()
  return ALLOWED_HEADERS.has(h) || h.startsWith('x-stainless-')
}

export function allowedOrigin(origin: string | null, configured: string | undefined): string | null {
  if (!origin) return null
  if (!configured || configured.trim() === '*') return '*'
  return configured.split(',').some((o) => o.trim() === origin) ? origin : null
}

/** The CORS headers of a response to an allowed origin. */
export function corsHeaders(origin: string): Record<string, string> {
  return origin === '*'
    ? { 'access-control-allow-origin': origin, 'access-control-expose-headers': EXPOSED_HEADERS }
    : {
        'access-control-allow-origin': origin,
        'access-control-expose-headers': EXPOSED_HEADERS,
        vary: 'Origin',
      }
}

export function applyCors(headers: Headers, origin: string): void {
  for (const [name, value] of Object.entries(corsHeaders(origin))) {
    if (name === 'vary') headers.append(name, value)
    else headers.set(name, value)
  }
}

export function preflight(request: Request, origin: string | null, requestId: string): Response {
  const headers = new Headers({ 'x-request-id': requestId })
  if (origin) {
    applyCors(headers, origin)
    headers.set('access-control-allow-methods', METHODS)
    const asked = request.headers.get('access-control-request-headers')
    if (asked) {
      const allowed = asked
        .split(',')
        .filter(isAllowedHeader)
        .map((h) => h.trim())
      if (allowed.length) headers.set('access-control-allow-headers', allowed.join(', '))
    }
    headers.set('access-control-max-age', '86400')
  } else {
    headers.set('allow', METHODS)
  }
  return new Response(null, { status: 204, headers })
}
