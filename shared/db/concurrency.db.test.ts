/**
 * Many connections at once running parameterised queries (the extended protocol: Parse, Bind,
 * Describe, Execute, Sync) inside and outside transactions. Against PGlite every connection shares
 * one Postgres session, and pglite-socket interleaves the connections message by message and keeps
 * a connection exclusive only once its BEGIN has run: a transaction could start between another
 * connection's Parse and Bind, whose Bind then met the wrong statement ("bind message supplies 2
 * parameters, but prepared statement "" requires 10"; reasoning jobs hit it writing their index).
 * scripts/db/pglite-socket-sequencing.ts keeps each sequence together; this holds it to that.
 */
import { sql } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { withTestDatabase } from '../../test/unit/database'

const ROUNDS = 12

/** A parameterised query whose answer names its caller; `params` varies the statement's shape. */
function tagged(worker: number, round: number, params: 2 | 10) {
  if (params === 2) return sql`select (${worker}::int * 1000 + ${round}::int)::text as v`
  return sql`select (${worker}::int * 1000 + ${round}::int + ${0}::int + ${0}::int + ${0}::int + ${0}::int
    + ${0}::int + ${0}::int + ${0}::int)::text || ${''}::text as v`
}

describe('concurrent connections through the bridge', () => {
  it('every parameterised query gets its own answer while other connections run transactions', async () => {
    const expected = (worker: number) => Array.from({ length: ROUNDS }, (_, i) => String(worker * 1000 + i))
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, worker) =>
        withTestDatabase(async (db) => {
          const answers: string[] = []
          for (let round = 0; round < ROUNDS; round++) {
            if (worker % 2 === 0) {
              const v = await db.transaction(async (tx) => {
                const a = await tx.execute<{ v: string }>(tagged(worker, round, 10))
                const b = await tx.execute<{ v: string }>(tagged(worker, round, 2))
                return a.rows[0]!.v === b.rows[0]!.v
                  ? a.rows[0]!.v
                  : `mismatch ${a.rows[0]!.v} ${b.rows[0]!.v}`
              })
              answers.push(v)
            } else {
              const r = await db.execute<{ v: string }>(tagged(worker, round, round % 2 ? 2 : 10))
              answers.push(r.rows[0]!.v)
            }
          }
          return answers
        }),
      ),
    )
    for (const [worker, answers] of results.entries()) expect(answers).toEqual(expected(worker))
  })
})
