/**
 * The opaque `next_cursor` of newest-first pages ordered by (created_at, id) (documents, reasoning
 * jobs, agent runs): the last item's key, base64url. The next page is what sorts strictly after
 * it, so pages neither repeat nor skip an item that existed when the first page was read, however
 * many are created meanwhile (new items sort before the first page).
 */
import { type SQL, sql } from 'drizzle-orm'
import type { PgColumn } from 'drizzle-orm/pg-core'
import { base64urlDecode, base64urlEncode, utf8, utf8Decode } from '../crypto/encoding'
import { AppError } from '../http/errors'
import { UUID } from '../http/uuid'

export interface PageKey {
  /** created_at as Postgres or JSON gives it (keep microseconds when the column has them). */
  readonly createdAt: string
  readonly id: string
}

export function encodePageCursor(key: PageKey): string {
  return base64urlEncode(utf8.encode(`${key.createdAt}|${key.id}`))
}

/** The key in a cursor this API returned; anything else is a 400 naming `param`. */
export function decodePageCursor(cursor: string, param: string): PageKey {
  const invalid = () =>
    new AppError(
      400,
      'invalid_cursor',
      `${param} is not a cursor this API returned; pass the next_cursor of the previous page unchanged, or omit it for the first page.`,
      { param },
    )
  const bytes = base64urlDecode(cursor)
  const text = bytes && utf8Decode(bytes)
  if (text == null) throw invalid()
  const [createdAt, id, ...rest] = text.split('|')
  if (rest.length > 0 || !createdAt || !id || !UUID.test(id) || Number.isNaN(Date.parse(createdAt)))
    throw invalid()
  return { createdAt, id }
}

/** The condition for rows after `key` in (created_at desc, id desc) order. */
export function afterPageKey(createdAt: PgColumn, id: PgColumn, key: PageKey): SQL {
  return sql`(${createdAt}, ${id}) < (${key.createdAt}::timestamptz, ${key.id}::uuid)`
}
