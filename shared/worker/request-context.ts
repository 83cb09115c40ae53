/**
 * What the gateway tells a family worker about a request: the request id, the authenticated
 * identity (null on public routes) and the body limit of the route. It travels as a typed
 * service-binding RPC argument, never as a client-supplied header.
 */
import type { KeyLimits } from '../auth/key-limits'
import type { ApiKeyMode, Audience, MemberRole } from '../db/schema'
import { AppError } from '../http/errors'

export type { Audience }

/** Test or live: the two separate worlds of a workspace (README, "Test and live"). */
export type Mode = ApiKeyMode

export type Principal =
  | {
      kind: 'api_key'
      keyId: string
      mode: ApiKeyMode
      /** The key's own limits (models, spend, rates); absent when it has none. */
      limits?: KeyLimits
    }
  | {
      kind: 'access_token'
      subject: string
      audience: Audience
      tokenId: string
      algorithm: string
      /**
       * Set on tokens the OAuth authorization server bound to one resource (RFC 8707), e.g.
       * `https://api.example.com/mcp`: the token is valid there only. `audience` is then `platform`
       * (a person's token).
       */
      resource?: string
      /** The OAuth client the token was issued to (authorization-code tokens). */
      clientId?: string
    }
  /**
   * A workspace's observability token (`svc_ot_…`): accepted on the OTLP ingestion routes only.
   * `subject` is `observability-token:<id>`.
   */
  | { kind: 'observability_token'; subject: string; tokenId: string }

export interface Identity {
  tenantId: string
  /**
   * The world the request acts in: an API key's own mode; for a person (a user's access token)
   * the mode the request chose with `x-svc-mode` (the console sends its test/live switch), live
   * when it chose none; live for service accounts and observability tokens. Every resource the
   * request creates belongs to this mode, and it sees only this mode's.
   */
  mode: Mode
  principal: Principal
  role: MemberRole
  planId: string
  scopes: string[]
}

export interface RequestContext {
  requestId: string
  identity: Identity | null
  /** The route's body limit in bytes (0 when the route takes no body). */
  maxBodyBytes: number
  /** Public base URL as the client saw it (scheme + host), for self-referencing links. */
  baseUrl: string
}

/**
 * The authenticated identity of a credential route. The gateway authenticates before it forwards,
 * so a family seeing none was called without the gateway: the 401 a client would have got there.
 */
export function requireIdentity(context: RequestContext): Identity {
  if (!context.identity) {
    throw new AppError(401, 'missing_credential', 'This endpoint requires a bearer credential.')
  }
  return context.identity
}

/** Stable id of the principal inside its tenant (owner of personal records such as memories). */
export function principalId(identity: Identity): string {
  return identity.principal.kind === 'api_key'
    ? `key:${identity.principal.keyId}`
    : `sub:${identity.principal.subject}`
}

/**
 * Who made a change, as `created_by` / `updated_by` columns and audit events record it: `key:<id>`
 * for an API key, the token's subject (`user:<id>`, `sa:<id>`) otherwise. (principalId prefixes
 * subjects with `sub:`; the two are stored in different places and must not be swapped.)
 */
export function actorOf(identity: Identity): string {
  return identity.principal.kind === 'api_key'
    ? `key:${identity.principal.keyId}`
    : identity.principal.subject
}

export function isTestMode(identity: Identity): boolean {
  return identity.mode === 'test'
}

/**
 * Where a request's resources live: one tenant and one mode. Every query of a resource a
 * credential creates (documents, memories, feedback, reasoning jobs, agent runs, provider
 * connections, usage) filters by both, so another mode's resource is as absent as another
 * tenant's: a 404, never a 403.
 */
export interface TenantScope {
  readonly tenantId: string
  readonly mode: Mode
}

export function scopeOf(identity: Identity): TenantScope {
  return { tenantId: identity.tenantId, mode: identity.mode }
}

const contexts = new WeakMap<Request, RequestContext>()
const bodyTexts = new WeakMap<Request, string>()

export function bindRequestContext(request: Request, context: RequestContext): void {
  contexts.set(request, context)
}

/** The JSON body text the gateway already read (within the route's limit), so it is not read again. */
export function bindBodyText(request: Request, text: string): void {
  bodyTexts.set(request, text)
}

export function bodyTextOf(request: Request): string | undefined {
  return bodyTexts.get(request)
}

export function requestContextOf(request: Request): RequestContext | undefined {
  return contexts.get(request)
}
