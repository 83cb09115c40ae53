/**
 * Personal memories as the gateway calls them, against Postgres: what is stored and shown, who
 * sees what, paging, and search.
 */

import { sql } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { memories } from '../../../shared/db/schema'
import type { Identity } from '../../../shared/worker/request-context'
import { principalId } from '../../../shared/worker/request-context'
import { createTenant, databaseEnv, withTestDatabase } from '../../../test/unit/database'
import { apiKeyIdentity, callFamily, errorOf } from '../../../test/unit/family-call'
import KnowledgeWorker from './index'

interface Memory {
  id: string
  object: 'memory'
  content: string
  body: Record<string, unknown>
  created_at: string
}
interface MemoryList {
  object: 'list'
  data: Memory[]
  has_more: boolean
}
type Scored = Memory & { score: number }

const call = (identity: Identity, path: string, body?: unknown) =>
  callFamily(KnowledgeWorker, databaseEnv, path, { identity, ...(body === undefined ? {} : { body }) })

async function remember(identity: Identity, body: Record<string, unknown>): Promise<Memory> {
  const res = await call(identity, '/svc/memories', body)
  expect(res.status).toBe(200)
  return (await res.json()) as Memory
}

async function list(identity: Identity, query = ''): Promise<MemoryList> {
  const res = await call(identity, `/svc/memories${query}`)
  expect(res.status).toBe(200)
  return (await res.json()) as MemoryList
}

async function search(identity: Identity, query: string, k?: number): Promise<Scored[]> {
  const res = await call(identity, '/svc/memories/search', { query, ...(k === undefined ? {} : { k }) })
  expect(res.status).toBe(200)
  return ((await res.json()) as { data: Scored[] }).data
}

/** The owner of a fresh tenant, with a key of its own. */
async function someone(): Promise<Identity> {
  return apiKeyIdentity({ tenantId: await createTenant() })
}

describe('POST /svc/memories', () => {
  it('keeps the body as sent and searches by its content, its text, or else the whole body', async () => {
    const me = await someone()
    const withContent = await remember(me, { content: 'prefers tabs', tags: ['style'] })
    expect(withContent).toMatchObject({
      object: 'memory',
      content: 'prefers tabs',
      body: { content: 'prefers tabs', tags: ['style'] },
    })
    expect(withContent.id).toMatch(/^[0-9a-f-]{36}$/)
    expect(Number.isNaN(Date.parse(withContent.created_at))).toBe(false)
    expect((await remember(me, { text: 'lives in Lyon' })).content).toBe('lives in Lyon')
    expect((await remember(me, { city: 'Lyon', zip: 69001 })).content).toBe('{"city":"Lyon","zip":69001}')
    expect((await remember(me, { content: 42, text: 'the answer' })).content).toBe('the answer')
  })

  it('accepts only a JSON object', async () => {
    const me = await someone()
    for (const body of [[1, 2], 'a string', 7, null]) {
      const res = await call(me, '/svc/memories', JSON.stringify(body))
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect((await errorOf(res)).type).toBe('invalid_request_error')
    }
    expect((await list(me)).data).toEqual([])
  })
})

describe('GET /svc/memories', () => {
  it('lists newest first and pages with has_more and the before cursor, without gaps or repeats', async () => {
    const me = await someone()
    const made: Memory[] = []
    for (let i = 0; i < 5; i++) made.push(await remember(me, { content: `note ${i}` }))
    const newestFirst = made.map((m) => m.id).reverse()
    expect((await list(me)).data.map((m) => m.id)).toEqual(newestFirst)

    const seen: string[] = []
    let page = await list(me, '?limit=2')
    for (;;) {
      expect(page.data.length).toBeLessThanOrEqual(2)
      seen.push(...page.data.map((m) => m.id))
      if (!page.has_more) break
      page = await list(me, `?limit=2&before=${page.data.at(-1)!.id}`)
    }
    expect(seen).toEqual(newestFirst)
    expect((await list(me, '?limit=5')).has_more).toBe(false)
  })

  it('pages by id without skipping rows written in the same instant (the timestamp cursor cannot tell them apart)', async () => {
    const me = await someone()
    const instant = new Date('2026-11-01T12:00:00.123Z')
    // Four records in one millisecond, one of them microseconds later (Postgres keeps µs).
    const ids = await withTestDatabase(async (db) => {
      const rows = await db
        .insert(memories)
        .values(
          [0, 1, 2, 3].map((i) => ({
            tenantId: me.tenantId,
            mode: me.mode,
            ownerId: principalId(me),
            content: `same instant ${i}`,
            body: { content: `same instant ${i}` },
            sizeBytes: 10,
            createdAt: instant,
          })),
        )
        .returning({ id: memories.id })
      await db.execute(
        sql`update memories set created_at = created_at + interval '400 microseconds' where id = ${rows[0]!.id}`,
      )
      return rows.map((r) => r.id)
    })
    const seen: string[] = []
    let page = await list(me, '?limit=1')
    for (;;) {
      seen.push(...page.data.map((m) => m.id))
      if (!page.has_more) break
      page = await list(me, `?limit=1&before=${page.data.at(-1)!.id}`)
    }
    expect(seen).toHaveLength(4)
    expect(new Set(seen)).toEqual(new Set(ids))
    expect(seen[0]).toBe(ids[0])
  })

  it("refuses a cursor id that is not in the caller's list", async () => {
    const me = await someone()
    const other = await someone()
    const theirs = await remember(other, { content: 'not yours' })
    for (const id of [theirs.id, crypto.randomUUID()]) {
      const res = await call(me, `/svc/memories?before=${id}`)
      expect(res.status).toBe(400)
      expect(await errorOf(res)).toMatchObject({ param: 'before', code: 'unknown_cursor' })
    }
  })

  it('refuses a limit outside 1..100 and a cursor that is not a timestamp, naming the parameter', async () => {
    const me = await someone()
    for (const [query, param] of [
      ['?limit=0', 'limit'],
      ['?limit=101', 'limit'],
      ['?limit=ten', 'limit'],
      ['?before=yesterday', 'before'],
    ] as const) {
      const res = await call(me, `/svc/memories${query}`)
      expect(res.status, query).toBe(400)
      expect((await errorOf(res)).param, query).toBe(param)
    }
  })
})

describe('memories are personal', () => {
  it('another key or a person of the same tenant sees none of them, and neither does the same key id elsewhere', async () => {
    const me = await someone()
    await remember(me, { content: 'my secret plan about bees' })
    const colleague = apiKeyIdentity({ tenantId: me.tenantId })
    const person: Identity = {
      ...me,
      principal: {
        kind: 'access_token',
        subject: `user:${crypto.randomUUID()}`,
        audience: 'platform',
        tokenId: crypto.randomUUID(),
        algorithm: 'ML-DSA-65',
      },
    }
    const keyId = me.principal.kind === 'api_key' ? me.principal.keyId : ''
    const sameKeyIdElsewhere = apiKeyIdentity({ tenantId: await createTenant(), keyId })
    for (const other of [colleague, person, sameKeyIdElsewhere]) {
      expect((await list(other)).data).toEqual([])
      expect(await search(other, 'bees')).toEqual([])
    }
    expect(await search(me, 'bees')).toHaveLength(1)
  })

  it('a person keeps their own memories across tokens (owned by the subject, not the token)', async () => {
    const tenantId = await createTenant()
    const subject = `user:${crypto.randomUUID()}`
    const token = (): Identity => ({
      tenantId,
      mode: 'live',
      principal: {
        kind: 'access_token',
        subject,
        audience: 'platform',
        tokenId: crypto.randomUUID(),
        algorithm: 'ML-DSA-65',
      },
      role: 'member',
      planId: 'pro',
      scopes: [],
    })
    const made = await remember(token(), { content: 'standup at nine' })
    expect((await list(token())).data.map((m) => m.id)).toEqual([made.id])
  })

  it("a person's test-mode memories are not its live ones, and the other way round", async () => {
    const tenantId = await createTenant()
    const person = (mode: 'test' | 'live'): Identity => ({
      tenantId,
      mode,
      principal: {
        kind: 'access_token',
        subject: 'user:00000000-0000-4000-8000-00000000000a',
        audience: 'platform',
        tokenId: crypto.randomUUID(),
        algorithm: 'ML-DSA-65',
      },
      role: 'owner',
      planId: 'pro',
      scopes: [],
    })
    const test = await remember(person('test'), { content: 'sandbox walrus' })
    const live = await remember(person('live'), { content: 'production walrus' })
    expect((await list(person('test'))).data.map((m) => m.id)).toEqual([test.id])
    expect((await list(person('live'))).data.map((m) => m.id)).toEqual([live.id])
    expect((await search(person('live'), 'walrus')).map((m) => m.id)).toEqual([live.id])
  })
})

describe('POST /svc/memories/search', () => {
  it('matches word forms (full-text search on the english configuration)', async () => {
    const me = await someone()
    await remember(me, { content: 'We deploy on Fridays after the review' })
    await remember(me, { content: 'Lunch is at noon' })
    const found = await search(me, 'friday deployments')
    expect(found.map((m) => m.content)).toEqual(['We deploy on Fridays after the review'])
  })

  it('falls back to substring matches, and ranks an exact phrase above a word-form match', async () => {
    const me = await someone()
    await remember(me, { content: 'kubernetes cluster upgrade notes' })
    expect((await search(me, 'bernet')).map((m) => m.content)).toEqual(['kubernetes cluster upgrade notes'])

    await remember(me, { content: 'upgrades happen monthly' })
    const ranked = await search(me, 'cluster upgrade')
    expect(ranked[0]?.content).toBe('kubernetes cluster upgrade notes')
    for (let i = 1; i < ranked.length; i++)
      expect(ranked[i - 1]!.score).toBeGreaterThanOrEqual(ranked[i]!.score)
  })

  it('returns at most k matches (3 by default)', async () => {
    const me = await someone()
    for (let i = 0; i < 5; i++) await remember(me, { content: `honey jar ${i}` })
    expect(await search(me, 'honey')).toHaveLength(3)
    expect(await search(me, 'honey', 4)).toHaveLength(4)
    expect(await search(me, 'honey', 100)).toHaveLength(5)
  })

  it('refuses an empty query and k outside 1..100, naming the field', async () => {
    const me = await someone()
    for (const [body, param] of [
      [{ query: '' }, 'query'],
      [{ query: 'x', k: 0 }, 'k'],
      [{ query: 'x', k: 101 }, 'k'],
      [{ k: 3 }, 'query'],
    ] as const) {
      const res = await call(me, '/svc/memories/search', body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect((await errorOf(res)).param, JSON.stringify(body)).toBe(param)
    }
  })
})
