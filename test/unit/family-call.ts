/**
 * Calls a family worker the way the gateway does: one `handle()` RPC with the request context the
 * gateway established (request id, verified identity, body limit, public base URL), answered with
 * plain values that come back here as a Response. Tests that use it check what a client of the
 * gateway would see from that family, without a gateway or a network in between.
 */
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test'
import type { FamilyRpc, ForwardedRequest, HeaderMap } from '../../shared/worker/family-rpc'
import type { Identity } from '../../shared/worker/request-context'

export const BASE_URL = 'https://svc.test'

/** A family worker's default export: constructed per call, as the runtime does per request. */
export type FamilyWorkerClass<Env> = new (ctx: ExecutionContext, env: Env) => FamilyRpc

export interface FamilyCall {
  method?: string
  /** JSON-encoded unless it is a string or bytes (sent as they are, bytes as a stream). */
  body?: unknown
  headers?: HeaderMap
  /** The verified caller; null on public routes. */
  identity?: Identity | null
  maxBodyBytes?: number
  baseUrl?: string
  requestId?: string
}

function forwardedBody(body: unknown): ForwardedRequest['body'] {
  if (typeof body === 'string') return body
  if (body instanceof Uint8Array) return new Response(body).body
  return JSON.stringify(body)
}

export async function callFamily<Env>(
  Worker: FamilyWorkerClass<Env>,
  env: Env,
  pathAndQuery: string,
  call: FamilyCall = {},
): Promise<Response> {
  const url = new URL(pathAndQuery, BASE_URL)
  const hasBody = call.body !== undefined
  const forwarded: ForwardedRequest = {
    method: call.method ?? (hasBody ? 'POST' : 'GET'),
    url: url.href,
    path: url.pathname,
    headers: { ...(hasBody ? { 'content-type': 'application/json' } : {}), ...call.headers },
    body: hasBody ? forwardedBody(call.body) : null,
    context: {
      requestId: call.requestId ?? `req_${crypto.randomUUID().replaceAll('-', '')}`,
      identity: call.identity ?? null,
      maxBodyBytes: call.maxBodyBytes ?? 64 * 1024,
      baseUrl: call.baseUrl ?? BASE_URL,
    },
  }
  const ctx = createExecutionContext()
  const answer = await new Worker(ctx, env).handle(forwarded)
  await waitOnExecutionContext(ctx)
  const headers = new Headers(answer.headers)
  for (const cookie of answer.setCookies ?? []) headers.append('set-cookie', cookie)
  return new Response(answer.body, { status: answer.status, headers })
}

/** An API-key caller (live mode, owner of a fresh tenant unless told otherwise). */
export function apiKeyIdentity(overrides: Partial<Identity> & { keyId?: string } = {}): Identity {
  const { keyId, ...rest } = overrides
  const identity = {
    tenantId: crypto.randomUUID(),
    principal: {
      kind: 'api_key',
      keyId: keyId ?? crypto.randomUUID(),
      mode: 'live',
    } as Identity['principal'],
    role: 'owner' as const,
    planId: 'pro',
    scopes: [],
    ...rest,
  }
  // An API key acts in its own mode (the gateway's rule): a test key given here is a test-mode caller.
  const mode = rest.mode ?? (identity.principal.kind === 'api_key' ? identity.principal.mode : 'live')
  return { ...identity, mode }
}

/** The OpenAI-shaped error body every family answers with. */
export async function errorOf(
  response: Response,
): Promise<{ message: string; type: string; param: string | null; code: string }> {
  const body = (await response.json()) as {
    error: { message: string; type: string; param: string | null; code: string }
  }
  return body.error
}
