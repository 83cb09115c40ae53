/**
 * The name a reader knows for an actor recorded as `key:<id>`, `user:<uuid>` or `sa:<uuid>` (who
 * changed a policy, who made a key): the key's or service account's name, the person's email. Each
 * lookup is scoped by the workspace: a key or account of another workspace, or a person who is not
 * a member of this one, has no name here (null), so an id never reveals another tenant's data.
 */
import { and, eq } from 'drizzle-orm'
import { parseSubject } from '../../../shared/auth/subjects'
import type { Drizzle } from '../../../shared/db/client'
import { apiKeys, members, serviceAccounts, users } from '../../../shared/db/schema'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export async function actorName(db: Drizzle, tenantId: string, actor: string | null): Promise<string | null> {
  if (actor === null) return null
  if (actor.startsWith('key:')) {
    const id = actor.slice(4)
    if (!UUID.test(id)) return null
    const [key] = await db
      .select({ name: apiKeys.name })
      .from(apiKeys)
      .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.id, id)))
    return key?.name ?? null
  }
  const subject = parseSubject(actor)
  if (subject?.kind === 'user') {
    const [person] = await db
      .select({ email: users.email })
      .from(members)
      .innerJoin(users, eq(users.id, members.userId))
      .where(and(eq(members.tenantId, tenantId), eq(members.userId, subject.id)))
    return person?.email ?? null
  }
  if (subject?.kind === 'service_account') {
    const [account] = await db
      .select({ name: serviceAccounts.name })
      .from(serviceAccounts)
      .where(and(eq(serviceAccounts.tenantId, tenantId), eq(serviceAccounts.id, subject.id)))
    return account?.name ?? null
  }
  return null
}
