/**
 * The creator is the ceiling: a credential creates or rotates only credentials that can do no
 * more than itself. Without this a key limited to `platform:write` could mint an unscoped admin
 * key, and a test key a live one, and so step out of its own limits. Every path that mints a
 * credential (API keys, service accounts, observability tokens, and the rotation of each) asks
 * `assertWithinCeiling` first; a person's console session is unscoped and live, so it keeps
 * minting anything its role allows.
 *
 * Three parts, each compared on its own:
 * - scopes: the new credential's scopes within the creator's. No scopes means every scope (still
 *   bounded by the role, shared/auth/scopes.ts), so only an unscoped creator mints an unscoped
 *   credential. A write scope holds its read scope (the gateway lets it call the read routes too).
 * - role: at most the creator's (member < admin < owner).
 * - mode: a test credential creates only test credentials.
 */
import type { ApiKeyMode, MemberRole } from '../db/schema'
import { AppError } from '../http/errors'
import type { Identity } from '../worker/request-context'
import { SCOPE_NAMES } from './scopes'

/** What a credential may do, as far as minting others is concerned. */
export interface CredentialPowers {
  /** Empty: unscoped, everything the role allows. */
  scopes: readonly string[]
  role: MemberRole
  mode: ApiKeyMode
}

const ROLE_RANK: Record<MemberRole, number> = { member: 0, admin: 1, owner: 2 }

/** Scopes a held scope includes besides itself ("everything X:read does, plus ..."). */
export const INCLUDED_SCOPES: Readonly<Record<string, readonly string[]>> = {
  'knowledge:write': ['knowledge:read'],
  'reasoning:write': ['reasoning:read'],
  'platform:write': ['platform:read'],
}

/**
 * What of `requested` exceeds `creator`, each part named as the refusal names it ("scope
 * chat:write", "role owner", "mode live"); empty when the creator may mint it. An unscoped request
 * by a scoped creator names every scope the creator lacks.
 */
export function exceedingParts(creator: CredentialPowers, requested: CredentialPowers): string[] {
  const parts: string[] = []
  if (creator.scopes.length > 0) {
    const held = new Set(creator.scopes.flatMap((s) => [s, ...(INCLUDED_SCOPES[s] ?? [])]))
    const wanted = requested.scopes.length === 0 ? SCOPE_NAMES : new Set(requested.scopes)
    for (const scope of wanted) if (!held.has(scope)) parts.push(`scope ${scope}`)
  }
  if (ROLE_RANK[requested.role] > ROLE_RANK[creator.role]) parts.push(`role ${requested.role}`)
  if (creator.mode === 'test' && requested.mode !== 'test') parts.push(`mode ${requested.mode}`)
  return parts
}

/**
 * The caller's own powers. The mode is the credential's, not the request's: a test key is capped
 * at test, while a person (who picks the mode of each request with x-svc-mode, as the console's
 * switch does) and a service account may mint either mode.
 */
export function powersOf(identity: Identity): CredentialPowers {
  const mode: ApiKeyMode = identity.principal.kind === 'api_key' ? identity.principal.mode : 'live'
  return { scopes: identity.scopes, role: identity.role, mode }
}

function describe(powers: CredentialPowers): string {
  const scopes = powers.scopes.length === 0 ? 'every scope' : `scopes ${powers.scopes.join(', ')}`
  return `${scopes}; role ${powers.role}; mode ${powers.mode}`
}

/**
 * Refuses (403 `credential_ceiling_exceeded`, naming each exceeding part) when the caller would
 * mint `what` (e.g. "this API key") with more powers than it has itself.
 */
export function assertWithinCeiling(identity: Identity, requested: CredentialPowers, what: string): void {
  const creator = powersOf(identity)
  const parts = exceedingParts(creator, requested)
  if (parts.length === 0) return
  const first = parts[0]!.split(' ')[0]!
  throw new AppError(
    403,
    'credential_ceiling_exceeded',
    `A credential cannot mint one that can do more than itself: ${what} would exceed this credential in ${parts.join(', ')} (this credential: ${describe(creator)}). Ask for no more than it holds (no scopes means every scope), or use a wider credential such as the workspace console.`,
    { param: first === 'scope' ? 'scopes' : first },
  )
}
