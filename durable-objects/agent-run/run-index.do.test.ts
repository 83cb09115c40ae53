/**
 * The run's row in the Postgres index (agent_runs), written by its AgentRun object: at once after
 * each change, kept as due work while Postgres is down and written by the alarm when it is back,
 * and never moved backwards by a late write. Postgres is the unit database (test/support).
 */
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test'
import { and, eq } from 'drizzle-orm'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openDatabase } from '../../shared/db/client'
import { agentRuns } from '../../shared/db/schema'
import type { AgentRun } from './agent-run.do'
import {
  codeEnv,
  indexWritten,
  installLimiter,
  mutableEnv,
  newRun,
  ownerOf,
  type RunHandle,
  runTurn,
  uninstallLimiter,
  WRITE_FILE,
} from './agent-run.do-fixtures'
import type { RunRow } from './agent-run.store'
import { writeRunIndex } from './run-index'

beforeEach(() => installLimiter())
afterEach(() => uninstallLimiter())

async function withDb<T>(work: (db: ReturnType<typeof openDatabase>['db']) => Promise<T>): Promise<T> {
  const database = openDatabase(codeEnv, { max: 1 })
  try {
    return await work(database.db)
  } finally {
    await database.close()
  }
}

function indexRow(run: RunHandle) {
  return withDb(async (db) => {
    const rows = await db
      .select()
      .from(agentRuns)
      .where(and(eq(agentRuns.tenantId, run.identity.tenantId), eq(agentRuns.runId, run.runId)))
    expect(rows.length).toBeLessThanOrEqual(1)
    return rows[0] ?? null
  })
}

function storedRun(run: RunHandle): Promise<RunRow> {
  return runInDurableObject(run.object, (instance: AgentRun) => {
    const row = instance.store.run()
    if (!row) throw new Error('no run')
    return row
  })
}

function indexDue(run: RunHandle): Promise<{ due_at: number }[]> {
  return runInDurableObject(run.object, (_instance: AgentRun, state) =>
    state.storage.sql
      .exec<{ due_at: number }>(`SELECT due_at FROM due_work WHERE kind = 'index_sync'`)
      .toArray(),
  )
}

const waiting = { client_tools: [WRITE_FILE], request: 'call write_file' }

describe('the run index', () => {
  it('has a new run as soon as it starts, and follows its turns, usage and cancel', async () => {
    const run = newRun()
    const turn = await runTurn(run, waiting)
    expect(turn.status).toBe(200)
    await indexWritten(run)
    const first = await indexRow(run)
    const stored = await storedRun(run)
    expect(first).toMatchObject({
      principal: 'key:key-test',
      apiKeyId: null,
      userId: null,
      mode: 'test',
      agentMode: 'edit',
      model: 'svc-comb',
      state: 'awaiting_approval',
      turnCount: 1,
      totalTokens: stored.usage_json.total_tokens,
      version: stored.index_version,
    })
    expect(first?.totalTokens).toBeGreaterThan(0)
    expect(first?.createdAt.getTime()).toBe(stored.created_at)

    // The cancel answers after its row is written: a list read right after shows it.
    const reply = await run.object.cancel(ownerOf(run.identity), 'test')
    expect(reply).toMatchObject({ ok: true, run: { state: 'cancelled' } })
    const cancelled = await indexRow(run)
    expect(cancelled?.state).toBe('cancelled')
    expect(cancelled!.version).toBeGreaterThan(first!.version)
    expect(await indexDue(run)).toEqual([])
  })

  it('keeps the write as due work while Postgres is down, and the alarm writes the newest state when it is back', async () => {
    const run = newRun()
    const proxy = mutableEnv.DATABASE_WS_PROXY
    // Nothing listens on port 1: every connection the object opens is refused.
    mutableEnv.DATABASE_WS_PROXY = '127.0.0.1:1'
    try {
      expect((await runTurn(run, { request: 'first' })).status).toBe(200)
      expect((await runTurn(run, { request: 'second' })).status).toBe(200)
      // Both changes are stored, the write is due again later, and nothing reached the index.
      await expect.poll(async () => (await indexDue(run))[0]?.due_at ?? 0).toBeGreaterThan(Date.now())
      expect(await runInDurableObject(run.object, (_i, state) => state.storage.getAlarm())).not.toBeNull()
    } finally {
      mutableEnv.DATABASE_WS_PROXY = proxy
    }
    expect(await indexRow(run)).toBeNull()

    // The retry comes due: the alarm writes the run as it is now, and no write is left.
    await runInDurableObject(run.object, (_i, state) => {
      state.storage.sql.exec(`UPDATE due_work SET due_at = 0 WHERE kind = 'index_sync'`)
    })
    expect(await runDurableObjectAlarm(run.object)).toBe(true)
    const row = await indexRow(run)
    const stored = await storedRun(run)
    expect(row).toMatchObject({ state: 'completed', turnCount: 2, version: stored.index_version })
    expect(await indexDue(run)).toEqual([])
    expect(await runDurableObjectAlarm(run.object)).toBe(false)
  })

  it('never moves a row backwards: a late write of an older version changes nothing', async () => {
    const run = newRun()
    await runTurn(run, waiting)
    await indexWritten(run)
    const older = await storedRun(run)
    await run.object.cancel(ownerOf(run.identity), 'test')
    const newest = await indexRow(run)
    expect(newest?.state).toBe('cancelled')

    // The write of the earlier state arrives late (a retry that was slow, reordered).
    await withDb((db) => writeRunIndex(db, older, 1))
    expect(await indexRow(run)).toEqual(newest)
    // The same version again is also ignored (a repeated alarm).
    const now = await storedRun(run)
    await withDb((db) => writeRunIndex(db, { ...now, state: 'running' }, 1))
    expect((await indexRow(run))?.state).toBe('cancelled')
  })
})

describe('runs from before the index', () => {
  it('a version-2 object gets the index column and writes its row once migrated', async () => {
    const run = newRun()
    await runTurn(run, waiting)
    await indexWritten(run)
    await withDb((db) =>
      db
        .delete(agentRuns)
        .where(and(eq(agentRuns.tenantId, run.identity.tenantId), eq(agentRuns.runId, run.runId))),
    )
    const version = await runInDurableObject(run.object, (instance: AgentRun, state) => {
      const sql = state.storage.sql
      // Back to how version 2 stored the run (no index), then the migration of a restarted object.
      sql.exec(`ALTER TABLE run DROP COLUMN index_version`)
      sql.exec(`UPDATE schema_meta SET value = '2' WHERE key = 'schema_version'`)
      instance.store.migrate()
      return sql.exec<{ value: string }>(`SELECT value FROM schema_meta WHERE key = 'schema_version'`).one()
        .value
    })
    expect(version).toBe('3')
    expect(await indexDue(run)).toHaveLength(1)
    expect(await runDurableObjectAlarm(run.object)).toBe(true)
    expect(await indexRow(run)).toMatchObject({ state: 'awaiting_approval', turnCount: 1, version: 1 })
  })
})
