/**
 * Migration 0013_mode_separation (test and live as separate worlds) on a database that already holds rows: each
 * resource gets the mode of the key that created it where the row names the key, live otherwise,
 * and the agent run index keeps what it knew (test_mode becomes mode, mode becomes agent_mode).
 * Applied the way `npm run db:migrate` applies migrations (statement by statement, in order), on
 * PGlite, from the SQL files themselves.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MIGRATIONS_FOLDER } from './migrate.ts'

const db = new PGlite()
afterAll(() => db.close())

async function apply(tag: string): Promise<void> {
  const sql = readFileSync(path.join(MIGRATIONS_FOLDER, `${tag}.sql`), 'utf8')
  for (const statement of sql.split('--> statement-breakpoint')) {
    if (statement.trim()) await db.exec(statement)
  }
}

const migrations = readdirSync(MIGRATIONS_FOLDER)
  .filter((f) => f.endsWith('.sql'))
  .map((f) => f.slice(0, -4))
  .sort()
const MODES = migrations.find((m) => m.endsWith('_mode_separation'))!

const tenant = '00000000-0000-4000-8000-000000000001'
const testKey = '00000000-0000-4000-8000-0000000000a1'
const liveKey = '00000000-0000-4000-8000-0000000000a2'
const user = '00000000-0000-4000-8000-0000000000b1'

beforeAll(async () => {
  for (const tag of migrations.filter((m) => m < MODES)) await apply(tag)
  await db.exec(`
    insert into plans (id, name, catalog_version) values ('team', 'Team', 'v1');
    insert into tenants (id, name, plan_id) values ('${tenant}', 'W', 'team');
    insert into api_keys (id, tenant_id, name, mode, key_hash, suffix)
      values ('${testKey}', '${tenant}', 't', 'test', 'h1', 'aaaa'), ('${liveKey}', '${tenant}', 'l', 'live', 'h2', 'bbbb');
    insert into memories (tenant_id, owner_id, content, body, size_bytes) values
      ('${tenant}', 'key:${testKey}', 'by the test key', '{}', 2),
      ('${tenant}', 'key:${liveKey}', 'by the live key', '{}', 2),
      ('${tenant}', 'sub:user:${user}', 'by a person', '{}', 2);
    insert into feedback (tenant_id, api_key_id, subject, body, request_id) values
      ('${tenant}', '${testKey}', null, '{"by":"test key"}', 'r1'),
      ('${tenant}', null, 'user:${user}', '{"by":"person"}', 'r2');
    insert into documents (id, tenant_id, source, content, content_sha256, size_bytes, characters, chunk_count)
      values ('00000000-0000-4000-8000-0000000000d1', '${tenant}', 'a.md', 'hello', 'x', 5, 5, 1);
    insert into document_chunks (document_id, tenant_id, ordinal, start_offset, end_offset, text, text_sha256)
      values ('00000000-0000-4000-8000-0000000000d1', '${tenant}', 0, 0, 5, 'hello', 'y');
    insert into reasoning_jobs (id, tenant_id, principal, model, product, status, record, record_version, created_at, updated_at) values
      ('00000000-0000-4000-8000-0000000000c1', '${tenant}', 'key:${testKey}', 'svc-hive', 'simulation_cloud', 'completed', '{}', 1, now(), now()),
      ('00000000-0000-4000-8000-0000000000c2', '${tenant}', 'sub:user:${user}', 'svc-hive', 'simulation_cloud', 'queued', '{}', 1, now(), now());
    insert into reasoning_idempotency_keys (tenant_id, key, request_hash, job_id, response_status) values
      ('${tenant}', 'key-of-test-job', 'h', '00000000-0000-4000-8000-0000000000c1', 202),
      ('${tenant}', 'key-not-indexed', 'h', '00000000-0000-4000-8000-0000000000c9', 202);
    insert into qpu_provider_connections (id, tenant_id, name, kind, base_url, target, credential, created_by) values
      ('00000000-0000-4000-8000-0000000000e1', '${tenant}', 'by test key', 'ionq', 'u', 't', 'c', 'key:${testKey}'),
      ('00000000-0000-4000-8000-0000000000e2', '${tenant}', 'by person', 'ionq', 'u', 't', 'c', 'user:${user}');
    insert into agent_runs (tenant_id, run_id, principal, test_mode, mode, model, state, turn_count, input_tokens,
      output_tokens, total_tokens, cost_usd, version, created_at, updated_at) values
      ('${tenant}', '00000000-0000-4000-8000-0000000000f1', 'key:${testKey}', true, 'edit', 'svc-comb', 'completed', 1, 1, 1, 2, 0, 1, now(), now()),
      ('${tenant}', '00000000-0000-4000-8000-0000000000f2', 'sub:user:${user}', false, 'plan', 'svc-comb', 'completed', 1, 1, 1, 2, 0, 1, now(), now());
  `)
  await apply(MODES)
}, 120_000)

const modes = async (query: string) =>
  Object.fromEntries((await db.query<{ k: string; mode: string }>(query)).rows.map((r) => [r.k, r.mode]))

describe('migration 0013 gives existing rows their mode', () => {
  it("the creating key's mode where the row names it, live for a person's", async () => {
    expect(await modes('select content as k, mode from memories')).toEqual({
      'by the test key': 'test',
      'by the live key': 'live',
      'by a person': 'live',
    })
    expect(await modes(`select body->>'by' as k, mode from feedback`)).toEqual({
      'test key': 'test',
      person: 'live',
    })
    expect(await modes('select status as k, mode from reasoning_jobs')).toEqual({
      completed: 'test',
      queued: 'live',
    })
    expect(await modes('select name as k, mode from qpu_provider_connections')).toEqual({
      'by test key': 'test',
      'by person': 'live',
    })
  })

  it("idempotency keys take their job's mode (live when the job is not indexed yet)", async () => {
    expect(await modes('select key as k, mode from reasoning_idempotency_keys')).toEqual({
      'key-of-test-job': 'test',
      'key-not-indexed': 'live',
    })
  })

  it('documents and their chunks, whose uploader is not recorded, are live', async () => {
    expect(await modes('select source as k, mode from documents')).toEqual({ 'a.md': 'live' })
    expect(await modes('select text as k, mode from document_chunks')).toEqual({ hello: 'live' })
  })

  it('the run index keeps test or live as mode and the agent mode as agent_mode', async () => {
    const rows = await db.query<{ principal: string; mode: string; agent_mode: string }>(
      'select principal, mode, agent_mode from agent_runs order by principal',
    )
    expect(rows.rows).toEqual([
      { principal: `key:${testKey}`, mode: 'test', agent_mode: 'edit' },
      { principal: `sub:user:${user}`, mode: 'live', agent_mode: 'plan' },
    ])
  })

  it('refuses a mode that is neither test nor live', async () => {
    await expect(
      db.exec(`update memories set mode = 'staging' where content = 'by a person'`),
    ).rejects.toThrow(/memories_mode_check/)
  })
})
