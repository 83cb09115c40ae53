/**
 * The name a reader knows for an actor recorded as `key:<id>`, `user:<uuid>` or `sa:<uuid>` (who
 * changed a policy, who made a key, whom a token was for): the key's or service account's name, the
 * person's email. Each lookup is scoped by the workspace: a key or account of another workspace, or
 * a person who is not a member of this one, has no name here, so an id never reveals another
 * tenant's data.
 */
import { and, eq, inArray } from 'drizzle-orm'
import { parseSubject } from '../../../shared/auth/subjects'
import type { Drizzle } from '../../../shared/db/client'
import { apiKeys, members, serviceAccounts, users } from '../../../shared/db/schema'
import { UUID } from '../../../shared/http/uuid'

/** The names of the actors this workspace knows (at most three queries); unknown ones are absent. */
export async function actorNames(
  db: Drizzle,
  tenantId: string,
  actors: Iterable<string>,
): Promise<Map<string, string>> {
  const keyIds = new Set<string>()
  const userIds = new Set<string>()
  const accountIds = new Set<string>()
  for (const actor of actors) {
    if (actor.startsWith('key:')) {
      if (UUID.test(actor.slice(4))) keyIds.add(actor.slice(4).toLowerCase())
      continue
    }
    const subject = parseSubject(actor)
    if (subject?.kind === 'user') userIds.add(subject.id.toLowerCase())
    if (subject?.kind === 'service_account') accountIds.add(subject.id.toLowerCase())
  }
  const names = new Map<string, string>()
  const [keys, people, accounts] = await Promise.all([
    keyIds.size === 0
      ? []
      : db
          .select({ id: apiKeys.id, name: apiKeys.name })
          .from(apiKeys)
          .where(and(eq(apiKeys.tenantId, tenantId), inArray(apiKeys.id, [...keyIds]))),
    userIds.size === 0
      ? []
      : db
          .select({ id: users.id, email: users.email })
          .from(members)
          .innerJoin(users, eq(users.id, members.userId))
          .where(and(eq(members.tenantId, tenantId), inArray(members.userId, [...userIds]))),
    accountIds.size === 0
      ? []
      : db
          .select({ id: serviceAccounts.id, name: serviceAccounts.name })
          .from(serviceAccounts)
          .where(and(eq(serviceAccounts.tenantId, tenantId), inArray(serviceAccounts.id, [...accountIds]))),
  ])
  for (const k of keys) names.set(`key:${k.id}`, k.name)
  for (const p of people) names.set(`user:${p.id}`, p.email)
  for (const a of accounts) names.set(`sa:${a.id}`, a.name)
  return names
}

export async function actorName(db: Drizzle, tenantId: string, actor: string | null): Promise<string | null> {
  if (actor === null) return null
  const names = await actorNames(db, tenantId, [actor])
  return names.values().next().value ?? null
}
