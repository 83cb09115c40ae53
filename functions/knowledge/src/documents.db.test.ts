/**
 * Tenant documents as the gateway calls them, against Postgres (the in-memory PGlite of unit-db,
 * which has pgvector): upload, replacement, listing, chunks, deletion, plan gating, the exact
 * document allowance under concurrency, tenancy per route, and hybrid retrieval with both vector
 * backends.
 */

import type { Client } from '@neondatabase/serverless'
import { and, eq, sql } from 'drizzle-orm'
import { describe, expect, it, vi } from 'vitest'
import { openDatabase } from '../../../shared/db/client'
import { documentChunks } from '../../../shared/db/schema'
import { PLAN_CATALOG_CONFIG } from '../../../shared/plans/plan-catalog'
import type { Identity } from '../../../shared/worker/request-context'
import { createTenant, databaseEnv, withTestDatabase } from '../../../test/unit/database'
import { apiKeyIdentity, callFamily, errorOf } from '../../../test/unit/family-call'
import { CHUNK_ROWS_PER_STATEMENT, MAX_DOCUMENT_BYTES, retrieveChunks } from './documents/document-store'
import KnowledgeWorker from './index'
import { testEmbedder } from './retrieval/embeddings'

interface Doc {
  id: string
  object: 'document'
  source: string
  size_bytes: number
  characters: number
  chunk_count: number
  indexing_state: string
  embedding_space: string | null
  created_at: string
  updated_at: string
}
type Uploaded = Doc & { status: string; embedded_chunks: number; reused_embeddings: number }
interface Page {
  data: Doc[]
  has_more: boolean
  next_cursor: string | null
}
interface Hit {
  document_id: string
  source: string
  index: number
  start: number
  end: number
  text: string
  score: number
  signals: { lexical: { rank: number; score: number } | null; vector: { rank: number; score: number } | null }
}
interface Retrieved {
  data: Hit[]
  ranking: { vector: { state: string; backend?: string; reason?: string; embedding_space?: string } }
}

const MiB = 1024 * 1024

const call = (
  identity: Identity,
  path: string,
  init: { body?: unknown; method?: string; env?: object } = {},
) =>
  callFamily(KnowledgeWorker, { ...databaseEnv, ...init.env }, path, {
    identity,
    maxBodyBytes: 2 * MiB,
    ...(init.method ? { method: init.method } : {}),
    ...(init.body === undefined ? {} : { body: init.body }),
  })

async function ok<T>(response: Promise<Response>): Promise<T> {
  const res = await response
  const text = await res.text()
  expect(res.status, text).toBe(200)
  return JSON.parse(text) as T
}

const upload = (who: Identity, source: string, content: string, env?: object) =>
  ok<Uploaded>(call(who, '/svc/documents/upload', { body: { source, content }, ...(env ? { env } : {}) }))
const list = (who: Identity, query = '') => ok<Page>(call(who, `/svc/documents${query}`))
const retrieve = (who: Identity, query: string, k?: number) =>
  ok<Retrieved>(call(who, '/svc/documents/retrieve', { body: { query, ...(k === undefined ? {} : { k }) } }))

async function liveCaller(planId = 'pro'): Promise<Identity> {
  return apiKeyIdentity({ tenantId: await createTenant(planId), planId })
}
async function testCaller(planId = 'pro'): Promise<Identity> {
  return apiKeyIdentity({
    tenantId: await createTenant(planId),
    planId,
    principal: { kind: 'api_key', keyId: crypto.randomUUID(), mode: 'test' },
  })
}

const chunkRows = (documentId: string) =>
  withTestDatabase((db) => db.select().from(documentChunks).where(eq(documentChunks.documentId, documentId)))

const paragraph = (topic: string, n: number) =>
  Array.from(
    { length: n },
    (_, i) => `The ${topic} guide, part ${i}, explains one more detail of ${topic}.`,
  ).join(' ')

describe('POST /svc/documents/upload', () => {
  it('stores, chunks with exact offsets, and answers created, then unchanged, then replaced', async () => {
    const me = await liveCaller()
    const content = `${paragraph('backup', 30)}\n\n${paragraph('restore', 30)}`
    const created = await upload(me, 'ops/backup.md', content)
    expect(created).toMatchObject({
      object: 'document',
      source: 'ops/backup.md',
      status: 'created',
      size_bytes: new TextEncoder().encode(content).byteLength,
      characters: content.length,
      indexing_state: 'full_text_only',
      embedding_space: null,
      embedded_chunks: 0,
    })
    expect(created.chunk_count).toBeGreaterThan(2)

    const detail = await ok<Doc & { chunks: { index: number; start: number; end: number; text: string }[] }>(
      call(me, `/svc/documents/${created.id}`),
    )
    expect(detail.chunks).toHaveLength(created.chunk_count)
    for (const chunk of detail.chunks) {
      expect(content.slice(chunk.start, chunk.end)).toBe(chunk.text)
      expect(chunk.text.length).toBeLessThanOrEqual(1000)
    }

    const again = await upload(me, 'ops/backup.md', content)
    expect(again).toMatchObject({ id: created.id, status: 'unchanged', updated_at: created.updated_at })

    const replaced = await upload(me, 'ops/backup.md', 'Backups run nightly at 02:00 UTC.')
    expect(replaced).toMatchObject({
      id: created.id,
      status: 'replaced',
      chunk_count: 1,
      created_at: created.created_at,
    })
    expect(await chunkRows(created.id)).toHaveLength(1)
    expect((await list(me)).data.map((d) => d.id)).toEqual([created.id])
  })

  it('writes a 1 MiB document in statements of at most 25 chunk rows: the swap without vectors, then the vectors', async () => {
    const me = await testCaller()
    const sentence = (i: number) =>
      `Paragraph ${i} records one more fact about the archive, in a sentence of its own.`
    const content = Array.from({ length: 12_500 }, (_, i) => sentence(i))
      .join(' ')
      .slice(0, MAX_DOCUMENT_BYTES - 100)
    // Every statement the product sends goes through its pool's client class (shared/db/client.ts).
    const probe = openDatabase(databaseEnv, { max: 1 })
    const ProductClient = (probe.pool as unknown as { Client: typeof Client }).Client
    await probe.close()
    const sent = ProductClient.prototype.query
    const statements: string[] = []
    const spy = vi.spyOn(ProductClient.prototype, 'query').mockImplementation(function (
      this: Client,
      ...args: unknown[]
    ) {
      const query = args[0] as string | { text: string }
      statements.push(typeof query === 'string' ? query : query.text)
      return Reflect.apply(sent, this, args)
    } as never)
    let uploaded: Uploaded
    try {
      uploaded = await upload(me, 'archive.md', content)
    } finally {
      spy.mockRestore()
    }
    expect(uploaded.chunk_count).toBeGreaterThan(1000)
    expect(uploaded).toMatchObject({ indexing_state: 'indexed', embedded_chunks: uploaded.chunk_count })
    const inserts = statements.filter((q) => /^insert into "document_chunks"/i.test(q))
    const updates = statements.filter((q) => /^\s*update "document_chunks" as c/i.test(q))
    const rowsOf = (q: string, marker: RegExp) => q.match(marker)?.length ?? 0
    expect(inserts).toHaveLength(Math.ceil(uploaded.chunk_count / CHUNK_ROWS_PER_STATEMENT))
    expect(updates).toHaveLength(Math.ceil(uploaded.chunk_count / CHUNK_ROWS_PER_STATEMENT))
    for (const q of inserts) expect(rowsOf(q, /\(default,/g)).toBeLessThanOrEqual(CHUNK_ROWS_PER_STATEMENT)
    for (const q of updates) expect(rowsOf(q, /::uuid/g)).toBeLessThanOrEqual(CHUNK_ROWS_PER_STATEMENT)
    const rows = await withTestDatabase((db) =>
      db
        .select({ embedded: sql<boolean>`${documentChunks.embedding} is not null` })
        .from(documentChunks)
        .where(eq(documentChunks.documentId, uploaded.id)),
    )
    expect(rows).toHaveLength(uploaded.chunk_count)
    expect(rows.every((r) => r.embedded)).toBe(true)
  }, 120_000)

  it('refuses a missing or empty field (400 naming it) and content over 1 MiB (413), storing nothing', async () => {
    const me = await liveCaller()
    for (const [body, status, param] of [
      [{ content: 'x' }, 400, 'source'],
      [{ source: 'a' }, 400, 'content'],
      [{ source: '', content: 'x' }, 400, 'source'],
      [{ source: 'a', content: 7 }, 400, 'content'],
      [{ source: 'a', content: ' \n\t' }, 400, 'content'],
      [{ source: 'x'.repeat(1025), content: 'x' }, 400, 'source'],
      [{ source: 'a', content: 'é'.repeat(MiB / 2 + 1) }, 413, 'content'],
    ] as const) {
      const res = await call(me, '/svc/documents/upload', { body })
      expect(res.status, JSON.stringify(body).slice(0, 60)).toBe(status)
      expect((await errorOf(res)).param).toBe(param)
    }
    expect((await list(me)).data).toEqual([])
  })

  it('reuses stored vectors for identical chunk text instead of embedding it again', async () => {
    const me = await testCaller()
    const first = await upload(me, 'a.md', `${paragraph('alpha', 20)}\n\n${paragraph('beta', 20)}`)
    expect(first.indexing_state).toBe('indexed')
    expect(first.embedding_space).toBe('svc-test-embedding@256')
    expect(first.embedded_chunks).toBe(first.chunk_count)
    const second = await upload(me, 'b.md', `${paragraph('alpha', 20)}\n\n${paragraph('gamma', 20)}`)
    expect(second.reused_embeddings).toBeGreaterThan(0)
    expect(second.embedded_chunks).toBe(second.chunk_count - second.reused_embeddings)
  })
})

describe('GET /svc/documents', () => {
  it('lists newest first and pages with next_cursor without gaps or repeats', async () => {
    const me = await liveCaller()
    const made: string[] = []
    for (let i = 0; i < 7; i++) made.push((await upload(me, `doc-${i}`, `Document number ${i}.`)).id)
    const seen: string[] = []
    let page = await list(me, '?limit=3')
    for (;;) {
      seen.push(...page.data.map((d) => d.id))
      if (!page.next_cursor) break
      expect(page.has_more).toBe(true)
      page = await list(me, `?limit=3&after=${page.next_cursor}`)
    }
    expect(seen).toEqual(made.reverse())
    const bad = await call(me, '/svc/documents?after=not-a-cursor')
    expect(bad.status).toBe(400)
    expect((await errorOf(bad)).param).toBe('after')
    expect((await call(me, '/svc/documents?limit=101')).status).toBe(400)
  })
})

describe('plan gating', () => {
  it('a plan without retrieval gets 403 feature_required on list, get and retrieve, and 429 on upload', async () => {
    const free = await liveCaller('free')
    for (const [path, body] of [
      ['/svc/documents', undefined],
      [`/svc/documents/${crypto.randomUUID()}`, undefined],
      ['/svc/documents/retrieve', { query: 'x' }],
    ] as const) {
      const res = await call(free, path, body ? { body } : {})
      expect(res.status, path).toBe(403)
      const payload = (await res.json()) as { error: { code: string }; svc_upgrade: Record<string, unknown> }
      expect(payload.error.code).toBe('feature_required')
      expect(payload.svc_upgrade).toMatchObject({
        reason: 'feature_required',
        current_plan: 'free',
        required_plan: 'pro',
        requested_feature: 'retrieval',
      })
    }
    const res = await call(free, '/svc/documents/upload', { body: { source: 's', content: 'text' } })
    expect(res.status).toBe(429)
    const payload = (await res.json()) as { svc_upgrade: { reason: string; binding_limit: unknown } }
    expect(payload.svc_upgrade.reason).toBe('tier_allowance_exhausted')
    expect(payload.svc_upgrade.binding_limit).toEqual({
      kind: 'documents',
      unit: 'documents',
      used: 0,
      limit: 0,
      remaining: 0,
    })
  })

  it('holds the document allowance exactly under 32 concurrent uploads; replacing is not a new document', async () => {
    const catalog = structuredClone(PLAN_CATALOG_CONFIG) as unknown as {
      plans: { id: string; documentAllowance: number }[]
    }
    catalog.plans.find((p) => p.id === 'pro')!.documentAllowance = 5
    const env = { PLAN_CATALOG: JSON.stringify(catalog) }
    const me = await liveCaller()
    const answers = await Promise.all(
      Array.from({ length: 32 }, (_, i) =>
        call(me, '/svc/documents/upload', { body: { source: `s${i}`, content: `text ${i}` }, env }),
      ),
    )
    const statuses = answers.map((r) => r.status)
    expect(statuses.filter((s) => s === 200)).toHaveLength(5)
    expect(statuses.filter((s) => s === 429)).toHaveLength(27)
    const stored = (await list(me, '?limit=100')).data
    expect(stored).toHaveLength(5)
    const replaced = await call(me, '/svc/documents/upload', {
      body: { source: stored[0]!.source, content: 'new text' },
      env,
    })
    expect(replaced.status).toBe(200)
  })
})

describe('tenancy', () => {
  it("another tenant's documents never appear in list, get, retrieve, and cannot be deleted", async () => {
    const owner = await testCaller()
    const doc = await upload(owner, 'secret.md', 'The launch code is ZEBRA-7781 and only we know it.')
    for (const other of [await liveCaller(), await testCaller()]) {
      expect((await list(other)).data).toEqual([])
      expect((await call(other, `/svc/documents/${doc.id}`)).status).toBe(404)
      expect((await retrieve(other, 'ZEBRA-7781 launch code')).data).toEqual([])
      expect((await call(other, `/svc/documents/${doc.id}`, { method: 'DELETE' })).status).toBe(404)
      // The same source in another tenant is another document.
      expect((await upload(other, 'secret.md', 'Ours.')).status).toBe('created')
    }
    expect((await retrieve(owner, 'ZEBRA-7781')).data.map((h) => h.document_id)).toEqual([doc.id])
  })

  it("the tenant's other mode is another world: 404, absent, its own source and allowance", async () => {
    const tester = await testCaller()
    const doc = await upload(tester, 'plan.md', 'The test plan mentions QUOKKA-42 on every page.')
    const live = apiKeyIdentity({ tenantId: tester.tenantId, planId: 'pro' })
    const person = { ...live, mode: 'test' as const, principal: personPrincipal() }
    expect((await list(live)).data).toEqual([])
    expect(await errorOf(await call(live, `/svc/documents/${doc.id}`))).toMatchObject({
      code: 'document_not_found',
    })
    expect((await retrieve(live, 'QUOKKA-42')).data).toEqual([])
    expect((await call(live, `/svc/documents/${doc.id}`, { method: 'DELETE' })).status).toBe(404)
    expect((await upload(live, 'plan.md', 'The live plan.')).status).toBe('created')
    // A person in test mode is in the test world with the key.
    expect((await retrieve(person, 'QUOKKA-42')).data.map((h) => h.document_id)).toEqual([doc.id])
    expect((await list(tester)).data.map((d) => d.id)).toEqual([doc.id])
  })
})

function personPrincipal(): Identity['principal'] {
  return {
    kind: 'access_token',
    subject: `user:${crypto.randomUUID()}`,
    audience: 'platform',
    tokenId: crypto.randomUUID(),
    algorithm: 'ML-DSA-65',
  }
}

describe('DELETE /svc/documents/{id}', () => {
  it('removes the document with its chunks and vectors', async () => {
    const me = await testCaller()
    const doc = await upload(me, 'gone.md', paragraph('ephemeral', 40))
    expect((await chunkRows(doc.id)).length).toBe(doc.chunk_count)
    const res = await ok<{ id: string; deleted: boolean }>(
      call(me, `/svc/documents/${doc.id}`, { method: 'DELETE' }),
    )
    expect(res).toEqual({ id: doc.id, object: 'document', deleted: true })
    expect(await chunkRows(doc.id)).toEqual([])
    expect((await retrieve(me, 'ephemeral guide')).data).toEqual([])
    expect((await call(me, `/svc/documents/${doc.id}`, { method: 'DELETE' })).status).toBe(404)
  })
})

describe('POST /svc/documents/retrieve', () => {
  it('full-text only without an embeddings provider, saying so; an identifier lookup wins', async () => {
    const me = await liveCaller()
    await upload(me, 'errors.md', 'Error ERR-4012 means the signing key expired. Rotate it from the console.')
    await upload(me, 'keys.md', 'Signing keys rotate every ninety days. Old keys verify for a week.')
    const found = await retrieve(me, 'ERR-4012')
    expect(found.ranking.vector).toEqual({ state: 'unavailable', reason: 'no_embeddings_provider' })
    expect(found.data[0]).toMatchObject({ source: 'errors.md', signals: { vector: null } })
    expect(found.data[0]!.signals.lexical!.rank).toBe(1)
  })

  it('fuses vectors with full text for test keys (pgvector here); vectors find a misspelt query', async () => {
    const me = await testCaller()
    await upload(
      me,
      'k8s.md',
      'Kubernetes autoscaling is configured per deployment with a target utilisation.',
    )
    await upload(me, 'lunch.md', 'The cafeteria serves lunch between noon and two.')
    const found = await retrieve(me, 'kubernetse autoscailing', 2)
    expect(found.ranking.vector).toEqual({
      state: 'used',
      backend: 'pgvector',
      embedding_space: 'svc-test-embedding@256',
    })
    expect(found.data[0]).toMatchObject({ source: 'k8s.md', signals: { lexical: null } })
    expect(found.data[0]!.signals.vector!.rank).toBe(1)
    for (let i = 1; i < found.data.length; i++)
      expect(found.data[i - 1]!.score).toBeGreaterThanOrEqual(found.data[i]!.score)
  })

  it('returns k chunks (3 by default, 1..100) with their offsets', async () => {
    const me = await testCaller()
    const content = paragraph('firewall', 80)
    const doc = await upload(me, 'fw.md', content)
    expect(doc.chunk_count).toBeGreaterThan(5)
    const three = await retrieve(me, 'firewall guide')
    expect(three.data).toHaveLength(3)
    for (const hit of three.data) expect(content.slice(hit.start, hit.end)).toBe(hit.text)
    expect((await retrieve(me, 'firewall guide', 5)).data).toHaveLength(5)
    for (const [body, param] of [
      [{ query: 'x', k: 0 }, 'k'],
      [{ query: 'x', k: 101 }, 'k'],
      [{ query: '' }, 'query'],
      [{ k: 2 }, 'query'],
    ] as const) {
      const res = await call(me, '/svc/documents/retrieve', { body })
      expect(res.status).toBe(400)
      expect((await errorOf(res)).param).toBe(param)
    }
  })

  it('ranks the same with the exact scan as with the pgvector index (differential)', async () => {
    const me = await testCaller()
    const topics = ['billing', 'backup', 'latency', 'tokens', 'audit', 'search', 'keys', 'queues']
    for (const topic of topics) await upload(me, `${topic}.md`, paragraph(topic, 25))
    const embedder = testEmbedder()
    for (const query of ['billing latency', 'how are queues audited', 'key rotation backup', 'tokn serch']) {
      const [exact, indexed] = await withTestDatabase((db) =>
        Promise.all(
          (['exact', 'pgvector'] as const).map((backend) =>
            retrieveChunks(
              db,
              { tenantId: me.tenantId, mode: me.mode },
              { query, k: 10 },
              { embedder, backend: async () => backend },
            ),
          ),
        ),
      )
      expect(exact!.vector).toMatchObject({ state: 'used', backend: 'exact' })
      const key = (r: typeof exact) => r!.chunks.map((c) => `${c.source}#${c.ordinal}`)
      expect(key(indexed), query).toEqual(key(exact))
      for (const [i, c] of exact!.chunks.entries()) {
        expect(indexed!.chunks[i]!.fused.vector?.score ?? 0).toBeCloseTo(c.fused.vector?.score ?? 0, 5)
      }
    }
  })

  it('sees a replaced document whole, old or new, never both or neither', async () => {
    const me = await testCaller()
    const filler = 'It holds enough words to need a chunk of its own, '.repeat(5)
    const version = (v: number) =>
      Array.from({ length: 12 }, (_, i) => `Marker section ${i} of version V${v}. ${filler}`).join('\n\n')
    const first = await upload(me, 'race.md', version(0))
    expect(first.chunk_count).toBeGreaterThan(2)
    const writes = (async () => {
      for (let v = 1; v <= 8; v++) await upload(me, 'race.md', version(v))
    })()
    const reads = (async () => {
      for (let i = 0; i < 12; i++) {
        const found = await retrieve(me, 'marker section version', 20)
        expect(found.data.length).toBeGreaterThan(0)
        const versions = new Set(found.data.flatMap((h) => h.text.match(/V\d+/g)!))
        expect(versions.size, [...versions].join(' | ')).toBe(1)
        expect(found.data.length).toBe(first.chunk_count)
      }
    })()
    await Promise.all([writes, reads])
    const left = await withTestDatabase((db) =>
      db
        .select({ n: sql<number>`count(*)::int` })
        .from(documentChunks)
        .where(and(eq(documentChunks.tenantId, me.tenantId))),
    )
    expect(left[0]!.n).toBe(first.chunk_count)
  })
})
