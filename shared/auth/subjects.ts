/**
 * The `sub` claim of access tokens names the principal kind and id: `user:<uuid>` for a person
 * who logged in, `sa:<uuid>` for a service account. The gateway parses it to look the principal
 * up (role, revocation) and families use it as the owner of personal records.
 */
import { UUID } from '../http/uuid'

export type Subject = { kind: 'user'; id: string } | { kind: 'service_account'; id: string }

export const userSubject = (userId: string) => `user:${userId}`
export const serviceAccountSubject = (serviceAccountId: string) => `sa:${serviceAccountId}`

/** The principal a `sub` names, or null when it is not one of ours. */
export function parseSubject(sub: string): Subject | null {
  const colon = sub.indexOf(':')
  const prefix = sub.slice(0, colon)
  const id = sub.slice(colon + 1)
  if (colon < 0 || !UUID.test(id)) return null
  if (prefix === 'user') return { kind: 'user', id }
  if (prefix === 'sa') return { kind: 'service_account', id }
  return null
}
