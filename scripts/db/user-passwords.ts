/**
 * Setting a person's password (workspace CLI and the development seed). The password is hashed
 * with Argon2id (shared/crypto/password.ts); the plaintext is never stored.
 *
 * Length rule: at least 15 characters, as NIST SP 800-63B-4 §3.1.1.2 asks of passwords used as a
 * single factor, at most 1024 bytes; no composition rules (the same guideline advises against them).
 */
import { sql } from 'drizzle-orm'
import { hashPassword } from '../../shared/crypto/password'
import type { Drizzle } from '../../shared/db/client'
import { users } from '../../shared/db/schema'
import { AppError } from '../../shared/http/errors'

export const MIN_PASSWORD_LENGTH = 15

export function checkNewPassword(password: string): void {
  const length = [...password.normalize('NFKC')].length
  if (length < MIN_PASSWORD_LENGTH) {
    throw new AppError(
      400,
      'password_too_short',
      `The password has ${length} characters; use at least ${MIN_PASSWORD_LENGTH} (a passphrase of a few words works well).`,
      { param: 'password' },
    )
  }
}

/** Sets the password of the user with this email (case-insensitive); returns the user id. */
export async function setUserPassword(db: Drizzle, email: string, password: string): Promise<string> {
  checkNewPassword(password)
  const passwordHash = await hashPassword(password)
  const [row] = await db
    .update(users)
    .set({ passwordHash })
    .where(sql`lower(${users.email}) = lower(${email})`)
    .returning({ id: users.id })
  if (!row) throw new AppError(404, 'user_not_found', `No user with email ${email}.`, { param: 'email' })
  return row.id
}

/** A random password for generated accounts: 24 base62 characters (~143 bits). */
export function generatePassword(): string {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
  const out: string[] = []
  while (out.length < 24) {
    for (const byte of crypto.getRandomValues(new Uint8Array(32))) {
      // Rejection sampling keeps every character equally likely (248 = 4 * 62).
      if (byte < 248 && out.length < 24) out.push(alphabet[byte % 62]!)
    }
  }
  return out.join('')
}
