/**
 * No single request can wedge the shared database (issue 14, item 3), on a stack of its own so
 * that a restart of its database cannot disturb the other tests:
 * 1. the exact sequence that used to hang every tenant: ~8,000 nested levels (48 KB) posted as a
 *    memory, then `{"text":"m","z":"\ud800"}`, then a login that must answer;
 * 2. the same hostile values sent straight to the database through the stack's own bridge and
 *    driver, as a route that forgot to check them would send them: each answers (a row or an
 *    error), and logins still answer;
 * 3. a statement that never ends is cut off (by the server's statement_timeout on PostgreSQL, by
 *    the client's deadline and the embedded server's watchdog on PGlite), and logins still answer.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import WebSocket from 'ws'
import { type Database, openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'
import { classifyDatabaseError } from '../../shared/db/errors.ts'
import { createScratchDatabase } from '../support/scratch-postgres.ts'
import { launchStack, type RunningStack } from '../support/stack-process.ts'

const fixture = inject('stack')
const STATEMENT_TIMEOUT_MS = '2000'

describe(`one request cannot wedge the database (${fixture.kind})`, () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-e2e-resilience-'))
  let running: RunningStack
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>> | null = null

  beforeAll(async () => {
    scratch = fixture.kind === 'postgres' ? await createScratchDatabase() : null
    running = await launchStack({
      dataDir,
      env: { DATABASE_STATEMENT_TIMEOUT_MS: STATEMENT_TIMEOUT_MS },
      ...(scratch ? { databaseUrl: scratch.url } : {}),
    })
    useWebSocketConstructor(WebSocket)
  }, 180_000)

  afterAll(async () => {
    await running?.stop()
    await scratch?.drop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  const post = (p: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${running.baseUrl}${p}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    })

  async function loginAnswers(): Promise<void> {
    const { ownerEmail, ownerPassword } = running.credentials
    const res = await post('/auth/login', JSON.stringify({ email: ownerEmail, password: ownerPassword }), {
      'cf-connecting-ip': `2001:db8::${crypto.randomUUID().slice(0, 4)}`,
    })
    expect(res.status, await res.clone().text()).toBe(200)
    expect(((await res.json()) as { access_token: string }).access_token).toBeTruthy()
  }

  /** Runs one statement on a connection of its own: the row it returns, or the error. */
  async function straightToTheDatabase(
    work: (db: Database['db']) => Promise<unknown>,
  ): Promise<{ ok: true } | { ok: false; error: unknown }> {
    const database = openDatabase({
      ...running.database,
      DATABASE_STATEMENT_TIMEOUT_MS: STATEMENT_TIMEOUT_MS,
    })
    try {
      await work(database.db)
      return { ok: true }
    } catch (error) {
      return { ok: false, error }
    } finally {
      await database.close()
    }
  }

  it('the sequence that hung every tenant: deep JSON, then a lone surrogate, then a login answers', async () => {
    const key = running.credentials.testKey
    const deep = `{"text":"m","z":${'{"a":'.repeat(8000)}1${'}'.repeat(8000)}}`
    expect(deep.length).toBeGreaterThan(48_000)
    expect(deep.length).toBeLessThan(64 * 1024)
    const first = await post('/svc/memories', deep, { authorization: `Bearer ${key}` })
    expect(first.status).toBe(400)
    expect(((await first.json()) as { error: { code: string } }).error.code).toBe('json_too_deep')
    const second = await post('/svc/memories', '{"text":"m","z":"\\ud800"}', {
      authorization: `Bearer ${key}`,
    })
    expect(second.status).toBe(400)
    expect(((await second.json()) as { error: { param: string } }).error.param).toBe('z')
    await loginAnswers()
  })

  it('the same values straight to the database: every statement answers, and logins still answer', async () => {
    // 8,000 levels: PGlite's Postgres used to overflow its native stack here, silently.
    const deep = '{"a":'.repeat(8000) + '1' + '}'.repeat(8000)
    expect(
      await straightToTheDatabase((db) => db.execute(sql`select ${deep}::jsonb is not null as ok`)),
    ).toEqual({
      ok: true,
    })
    // Two million levels: past any stack. PostgreSQL refuses it ("stack depth limit exceeded");
    // PGlite's backend is replaced (the connection drops).
    const deeper = '['.repeat(2_000_000) + ']'.repeat(2_000_000)
    const overflow = await straightToTheDatabase((db) => db.execute(sql`select ${deeper}::jsonb is not null`))
    expect(overflow.ok).toBe(false)
    // The lone surrogate that used to spin the wedged backend at 100% CPU: an ordinary error now.
    const surrogate = await straightToTheDatabase((db) => db.execute(sql`select ${'{"z":"\\ud800"}'}::jsonb`))
    expect(surrogate.ok).toBe(false)
    expect(surrogate.ok === false && classifyDatabaseError(surrogate.error)).toBe('encoding')
    await loginAnswers()
    if (fixture.kind === 'pglite') {
      expect(running.output()).toMatch(/embedded Postgres: restarting .*Maximum call stack size exceeded/)
    }
  })

  it('a statement that never ends is cut off, its connection dropped, and logins still answer', async () => {
    const stuck = await straightToTheDatabase((db) => db.execute(sql`select pg_sleep(3600)`))
    expect(stuck.ok).toBe(false)
    // PostgreSQL cancels it itself (the database default the migrate command set); PGlite cannot,
    // so the client gives up and the embedded server replaces the busy backend.
    expect(stuck.ok === false && classifyDatabaseError(stuck.error)).toBe(
      fixture.kind === 'postgres' ? 'statement_timeout' : 'client_timeout',
    )
    await loginAnswers()
    if (fixture.kind === 'pglite') {
      expect(running.output()).toMatch(
        /embedded Postgres: restarting .*longer than the 2000 ms statement timeout/,
      )
    }
  })
})
