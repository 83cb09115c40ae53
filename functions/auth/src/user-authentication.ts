/**
 * A person proving who they are with email and password: POST /auth/login and the OAuth
 * authorization page (oauth/oauth-routes.ts) both go through here, so both have the same
 * throttling (per account and client address, with per-account and per-address backstops,
 * login-throttle.ts), the same constant-cost check for unknown emails, and the same rehash of an
 * outdated password hash.
 */
import { eq, sql } from 'drizzle-orm'
import { hashPassword, needsRehash } from '../../../shared/crypto'
import type { Drizzle } from '../../../shared/db/client'
import { members, users } from '../../../shared/db/schema'
import { AppError } from '../../../shared/http/errors'
import type { AuthSettings } from './auth.context'
import {
  assertNotThrottled,
  clearAccount,
  clientAddress,
  loginThrottleKeys,
  recordFailure,
} from './login-throttle'
import { verifyAgainst } from './secret-verification'

export interface AuthenticatedUser {
  userId: string
  /** The workspaces the user is a member of. */
  tenantIds: string[]
}

/** 401 `invalid_credentials` for a wrong email or password; 429 `login_throttled` during a lockout. */
export async function authenticateUser(
  db: Drizzle,
  request: Request,
  settings: AuthSettings,
  credentials: { email: string; password: string },
): Promise<AuthenticatedUser> {
  const keys = loginThrottleKeys(credentials.email, clientAddress(request), settings)
  const counted = await assertNotThrottled(db, keys)
  const [user] = await db
    .select({ id: users.id, passwordHash: users.passwordHash })
    .from(users)
    .where(sql`lower(${users.email}) = lower(${credentials.email.trim()})`)
    .limit(1)
  if (!user || !(await verifyAgainst(user.passwordHash, credentials.password))) {
    await recordFailure(db, keys, settings)
    throw new AppError(401, 'invalid_credentials', 'The email or password is wrong.')
  }
  if (counted.has(keys[0]!.key)) await clearAccount(db, keys)
  if (user.passwordHash && needsRehash(user.passwordHash)) {
    const fresh = await hashPassword(credentials.password)
    await db.update(users).set({ passwordHash: fresh }).where(eq(users.id, user.id))
  }
  const memberships = await db
    .select({ tenantId: members.tenantId })
    .from(members)
    .where(eq(members.userId, user.id))
  return { userId: user.id, tenantIds: memberships.map((m) => m.tenantId) }
}

/** The workspace to act in: the requested one (403 unless a member), else the only one. */
export function chooseTenant(tenantIds: readonly string[], requested: string | undefined): string {
  if (requested) {
    if (!tenantIds.includes(requested)) {
      throw new AppError(403, 'not_a_member', `You are not a member of workspace ${requested}.`, {
        param: 'tenant_id',
      })
    }
    return requested
  }
  if (tenantIds.length === 1) return tenantIds[0]!
  if (tenantIds.length === 0) {
    throw new AppError(403, 'no_workspace', 'This account belongs to no workspace; ask an owner to add you.')
  }
  throw new AppError(
    400,
    'tenant_required',
    `You belong to ${tenantIds.length} workspaces; pass tenant_id, one of ${tenantIds.join(', ')}.`,
    { param: 'tenant_id' },
  )
}
