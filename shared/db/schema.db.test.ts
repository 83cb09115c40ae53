/**
 * The migrations in migrations/ (what `npm run db:migrate` applies) against the drizzle schema the
 * code queries with: a column, type, nullability or index changed in shared/db/schema.ts without
 * `npm run db:generate` fails here instead of in production. Plus the rules the schema promises
 * users: a deleted tenant takes what it owns with it, one account per email whatever its case,
 * one row per API key.
 */
import { eq, getTableName, isTable, sql } from 'drizzle-orm'
import { getTableConfig, type PgTable } from 'drizzle-orm/pg-core'
import { describe, expect, it } from 'vitest'
import { createTenant, withTestDatabase } from '../../test/unit/database'
import * as schema from './schema'

const TABLES: PgTable[] = Object.values(schema as Record<string, unknown>).filter((value): value is PgTable =>
  isTable(value),
)

const normalise = (type: string) => type.replaceAll(' ', '').toLowerCase()

describe('the migrations build the schema the code queries', () => {
  it('finds every table of the schema', () => {
    expect(TABLES.map((t) => getTableName(t)).sort()).toEqual(
      expect.arrayContaining(['api_keys', 'memories', 'tenants', 'usage_ledger']),
    )
  })

  it('has every column with its type and nullability, and no column the schema does not know', async () => {
    const rows = await withTestDatabase((db) =>
      db.execute<{ table_name: string; column_name: string; type: string; not_null: boolean }>(sql`
        select c.relname as table_name, a.attname as column_name,
               format_type(a.atttypid, a.atttypmod) as type, a.attnotnull as not_null
        from pg_attribute a
        join pg_class c on c.oid = a.attrelid
        join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and c.relkind = 'r' and a.attnum > 0 and not a.attisdropped`),
    )
    const actual = new Map(rows.rows.map((r) => [`${r.table_name}.${r.column_name}`, r]))
    const expected = new Set<string>()
    for (const table of TABLES) {
      const config = getTableConfig(table)
      for (const column of config.columns) {
        const key = `${config.name}.${column.name}`
        expected.add(key)
        const found = actual.get(key)
        expect(found, `${key} is missing from the migrations`).toBeDefined()
        expect(normalise(found!.type), `${key} type`).toBe(normalise(column.getSQLType()))
        expect(found!.not_null, `${key} not null`).toBe(column.notNull)
      }
    }
    const schemaTables = new Set(TABLES.map((t) => getTableName(t)))
    const unknown = [...actual.keys()].filter(
      (key) => schemaTables.has(key.split('.')[0]!) && !expected.has(key),
    )
    expect(unknown, 'columns the migrations add that schema.ts does not declare').toEqual([])
  })

  it('has every index, unique where the schema says so', async () => {
    const rows = await withTestDatabase((db) =>
      db.execute<{ indexname: string; indexdef: string }>(
        sql`select indexname, indexdef from pg_indexes where schemaname = 'public'`,
      ),
    )
    const actual = new Map(rows.rows.map((r) => [r.indexname, r.indexdef]))
    for (const table of TABLES) {
      for (const index of getTableConfig(table).indexes) {
        const name = index.config.name!
        expect(actual.get(name), `index ${name}`).toBeDefined()
        expect(actual.get(name)!.startsWith('CREATE UNIQUE INDEX'), `index ${name} unique`).toBe(
          index.config.unique,
        )
      }
    }
  })
})

describe('what the schema guarantees', () => {
  it('deletes what a tenant owns when the tenant is deleted, and nothing of other tenants', async () => {
    const doomed = await createTenant()
    const kept = await createTenant()
    await withTestDatabase(async (db) => {
      for (const tenantId of [doomed, kept]) {
        await db
          .insert(schema.memories)
          .values({ tenantId, mode: 'live', ownerId: 'key:x', content: 'c', body: {}, sizeBytes: 2 })
        await db.insert(schema.feedback).values({ tenantId, mode: 'live', body: {}, requestId: 'req_1' })
        await db.insert(schema.apiKeys).values({
          tenantId,
          name: 'k',
          mode: 'live',
          keyHash: crypto.randomUUID(),
          suffix: 'abcd',
        })
      }
      await db.delete(schema.tenants).where(eq(schema.tenants.id, doomed))
      for (const table of [schema.memories, schema.feedback, schema.apiKeys]) {
        const left = await db
          .select({ tenantId: table.tenantId })
          .from(table)
          .where(eq(table.tenantId, doomed))
        expect(left, getTableName(table)).toEqual([])
        const other = await db
          .select({ tenantId: table.tenantId })
          .from(table)
          .where(eq(table.tenantId, kept))
        expect(other, getTableName(table)).toHaveLength(1)
      }
    })
  })

  it('allows one account per email address, whatever its case', async () => {
    const local = `someone-${crypto.randomUUID()}`
    await withTestDatabase(async (db) => {
      await db.insert(schema.users).values({ email: `${local}@example.test` })
      const duplicate = await db
        .insert(schema.users)
        .values({ email: `${local.toUpperCase()}@Example.TEST` })
        .then(
          () => null,
          (err: unknown) => err,
        )
      expect(String((duplicate as Error | null)?.cause ?? duplicate)).toMatch(/users_email_lower_idx/)
    })
  })

  it('stores an API key hash once', async () => {
    const tenantId = await createTenant()
    const key = { tenantId, name: 'k', mode: 'live' as const, keyHash: crypto.randomUUID(), suffix: 'abcd' }
    await withTestDatabase(async (db) => {
      await db.insert(schema.apiKeys).values(key)
      const again = await db
        .insert(schema.apiKeys)
        .values(key)
        .then(
          () => null,
          (err: unknown) => err,
        )
      expect(String((again as Error | null)?.cause ?? again)).toMatch(/api_keys_hash_idx/)
    })
  })
})
