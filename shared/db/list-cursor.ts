/**
 * The `before` cursor of newest-first lists (memories, crypto violations): either the id of the
 * last item of the previous page, or an instant. Pages follow ids: `(created_at, id)` is compared
 * in SQL, so rows written in the same millisecond (Postgres keeps microseconds, a JSON timestamp
 * only milliseconds) are neither skipped nor repeated. An instant means "strictly older than", for
 * a client that wants what came before a moment.
 */
import { z } from '@hono/zod-openapi'
import { and, eq, lt, type SQL, sql } from 'drizzle-orm'
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core'
import { AppError } from '../http/errors'
import type { Drizzle } from './client'

export const ListCursorSchema = z
  .union([z.uuid(), z.iso.datetime({ offset: true })], {
    error: 'must be the id of the last item of the previous page, or an ISO 8601 timestamp',
  })
  .optional()
  .openapi({
    description:
      'Page cursor: the `id` of the last item of the previous page (exact), or an ISO 8601 instant (items strictly older).',
  })

interface Listed {
  table: PgTable
  id: PgColumn
  createdAt: PgColumn
  /** What the caller may list (tenant, owner): a cursor id outside it is refused. */
  scope: SQL | undefined
}

/** The condition for items after the cursor, or undefined for the first page. */
export async function olderThanCursor(
  db: Drizzle,
  list: Listed,
  before: string | undefined,
): Promise<SQL | undefined> {
  if (before === undefined) return undefined
  if (!z.uuid().safeParse(before).success) return lt(list.createdAt, new Date(before))
  const [found] = await db
    .select({ id: list.id })
    .from(list.table)
    .where(and(eq(list.id, before), list.scope))
    .limit(1)
  if (!found) {
    throw new AppError(
      400,
      'unknown_cursor',
      'before: no item with this id in this list; pass the id of the last item of the previous page.',
      {
        param: 'before',
      },
    )
  }
  return sql`(${list.createdAt}, ${list.id}) < (select ${list.createdAt}, ${list.id} from ${list.table} where ${list.id} = ${before})`
}
