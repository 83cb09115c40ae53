/**
 * Rows read back from a Durable Object's SQLite storage, checked against the schema of what the
 * object writes: a row that does not fit (a damaged or hand-edited database, a missed migration)
 * fails loudly, naming the table and the column, instead of flowing on as a wrong value.
 */
import { z } from 'zod'
import { KeyLimitsSchema } from '../shared/auth/key-limits'
import { AUDIENCES } from '../shared/db/schema'

export type StoredRow = Record<string, SqlStorageValue>

export function parseStoredRows<T extends z.ZodType>(
  schema: T,
  rows: StoredRow[],
  table: string,
): z.infer<T>[] {
  return rows.map((row) => {
    const parsed = schema.safeParse(row)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      throw new Error(
        `stored ${table} row does not fit its schema: ${issue?.path.join('.')}: ${issue?.message}`,
      )
    }
    return parsed.data
  })
}

/** A TEXT column holding JSON, parsed and checked against `schema` as part of the row's schema. */
export const storedJson = <T extends z.ZodType>(schema: T) =>
  z.string().transform((text, ctx): z.infer<T> => {
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      ctx.addIssue({ code: 'custom', message: 'stored JSON is unreadable' })
      return z.NEVER
    }
    const parsed = schema.safeParse(value)
    if (!parsed.success) {
      ctx.addIssue({
        code: 'custom',
        message: `stored JSON does not fit: ${parsed.error.issues[0]?.message}`,
      })
      return z.NEVER
    }
    return parsed.data
  })

/**
 * The caller's identity as a Durable Object stores it to act for them after a restart (settling
 * metering): the fields those steps need, checked on the way back in. Identities stored before
 * modes were separate have no `mode`: it was the API key's, and live for everyone else.
 */
export const StoredIdentitySchema = z
  .object({
    tenantId: z.string(),
    mode: z.enum(['live', 'test']).optional(),
    principal: z.union([
      z.object({
        kind: z.literal('api_key'),
        keyId: z.string(),
        mode: z.enum(['live', 'test']),
        /** The key's own limits when it was stored (absent: none, or stored before limits existed). */
        limits: KeyLimitsSchema.optional(),
      }),
      z.object({
        kind: z.literal('access_token'),
        subject: z.string(),
        audience: z.enum(AUDIENCES),
        tokenId: z.string(),
        algorithm: z.string(),
      }),
    ]),
    role: z.enum(['owner', 'admin', 'member']),
    planId: z.string(),
    scopes: z.array(z.string()),
  })
  .transform(({ mode, ...identity }) => ({
    ...identity,
    mode: mode ?? (identity.principal.kind === 'api_key' ? identity.principal.mode : ('live' as const)),
  }))
