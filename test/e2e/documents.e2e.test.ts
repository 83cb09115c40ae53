/**
 * Tenant documents through the gateway on the running stack: on PGlite vectors are ranked by the
 * pgvector index, on the PostgreSQL server (no pgvector) by the exact scan, with the same answers.
 * Plan gating, the exact allowance under 32 concurrent uploads, replacement races and tenancy.
 */
import { sql } from 'drizzle-orm'
import { describe, expect, inject, it } from 'vitest'
import WebSocket from 'ws'
import { openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'
import { createWorkspace } from './chat-fixtures.ts'

const stack = inject('stack')
const embeddings = stack.fakes.embeddings!.controlUrl as string

async function embeddingsControl<T = unknown>(path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${embeddings}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  expect(res.status).toBe(200)
  return (await res.json()) as T
}
const embeddingRequests = () =>
  embeddingsControl<{ body: { input: string[] }; failure: string | null }[]>('/requests')
const expectedBackend = stack.kind === 'pglite' ? 'pgvector' : 'exact'

async function api(key: string, path: string, body?: unknown, method?: string): Promise<Response> {
  return fetch(`${stack.baseUrl}${path}`, {
    method: method ?? (body === undefined ? 'GET' : 'POST'),
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
}

async function json<T>(response: Promise<Response>, status = 200): Promise<T> {
  const res = await response
  const text = await res.text()
  expect(res.status, text.slice(0, 500)).toBe(status)
  return JSON.parse(text) as T
}

interface Uploaded {
  id: string
  status: string
  chunk_count: number
  indexing_state: string
  embedding_space: string | null
}
interface Retrieved {
  data: {
    document_id: string
    source: string
    text: string
    start: number
    end: number
    signals: Record<string, unknown>
  }[]
  ranking: { vector: { state: string; backend?: string; reason?: string } }
}

const upload = (key: string, source: string, content: string) =>
  json<Uploaded>(api(key, '/svc/documents/upload', { source, content }))
const retrieve = (key: string, query: string, k = 3) =>
  json<Retrieved>(api(key, '/svc/documents/retrieve', { query, k }))

describe('documents through the gateway', () => {
  it('uploads, lists and retrieves with both signals (test key), the vector backend the database allows', async () => {
    const ws = await createWorkspace('pro')
    const a = await upload(ws.testKey, 'k8s.md', 'Kubernetes autoscaling is configured per deployment.')
    expect(a).toMatchObject({
      status: 'created',
      indexing_state: 'indexed',
      embedding_space: 'svc-test-embedding@256',
    })
    await upload(ws.testKey, 'lunch.md', 'The cafeteria serves lunch between noon and two.')
    const list = await json<{ data: { source: string }[] }>(api(ws.testKey, '/svc/documents'))
    expect(list.data.map((d) => d.source)).toEqual(['lunch.md', 'k8s.md'])
    const typo = await retrieve(ws.testKey, 'kubernetse autoscailing', 1)
    expect(typo.ranking.vector).toMatchObject({ state: 'used', backend: expectedBackend })
    expect(typo.data[0]).toMatchObject({ source: 'k8s.md', signals: { lexical: null } })
    const exact = await retrieve(ws.testKey, 'cafeteria lunch', 1)
    expect(exact.data[0]!.source).toBe('lunch.md')
  })

  it('gates by plan: 403 feature_required on Free list and retrieve, 429 documents on upload', async () => {
    const ws = await createWorkspace('free')
    for (const [path, body] of [
      ['/svc/documents', undefined],
      ['/svc/documents/retrieve', { query: 'x' }],
    ] as const) {
      const refused = await json<{ svc_upgrade: { reason: string } }>(api(ws.liveKey, path, body), 403)
      expect(refused.svc_upgrade.reason).toBe('feature_required')
    }
    const full = await json<{ svc_upgrade: { binding_limit: { kind: string; limit: number } } }>(
      api(ws.liveKey, '/svc/documents/upload', { source: 'a', content: 'b' }),
      429,
    )
    expect(full.svc_upgrade.binding_limit).toMatchObject({ kind: 'documents', limit: 0 })
  })

  it('never stores one document over the allowance under 32 concurrent uploads', async () => {
    const ws = await createWorkspace('pro')
    useWebSocketConstructor(WebSocket)
    const database = openDatabase(stack.database, { max: 1 })
    try {
      // 90 of Pro's 100 live documents already stored (test documents count apart).
      await database.db.execute(sql`
        insert into documents (tenant_id, mode, source, content, content_sha256, size_bytes, characters, chunk_count)
        select ${ws.tenantId}::uuid, 'live', 'seed-' || n, 'seed', 'x', 4, 4, 0 from generate_series(1, 90) n`)
    } finally {
      await database.close()
    }
    const answers = await Promise.all(
      Array.from({ length: 32 }, (_, i) =>
        api(ws.liveKey, '/svc/documents/upload', { source: `burst-${i}`, content: `burst document ${i}` }),
      ),
    )
    const statuses = answers.map((r) => r.status).sort()
    expect(statuses.filter((s) => s === 200)).toHaveLength(10)
    expect(statuses.filter((s) => s === 429)).toHaveLength(22)
    const all = await json<{ data: unknown[]; has_more: boolean }>(
      api(ws.liveKey, '/svc/documents?limit=100'),
    )
    expect(all.data).toHaveLength(100)
    expect(all.has_more).toBe(false)
  })

  it('keeps tenants apart on every route', async () => {
    const owner = await createWorkspace('pro')
    const other = await createWorkspace('pro')
    const doc = await upload(owner.testKey, 'secret.md', 'The vault code is ZEBRA-7781.')
    expect((await json<{ data: unknown[] }>(api(other.testKey, '/svc/documents'))).data).toEqual([])
    expect((await retrieve(other.testKey, 'ZEBRA-7781 vault code')).data).toEqual([])
    expect((await api(other.liveKey, `/svc/documents/${doc.id}`)).status).toBe(404)
    expect((await api(other.liveKey, `/svc/documents/${doc.id}`, undefined, 'DELETE')).status).toBe(404)
    expect((await retrieve(owner.testKey, 'ZEBRA-7781')).data[0]!.document_id).toBe(doc.id)
    // The workspace's live key is in the other mode: it cannot delete a test document either.
    expect((await api(owner.liveKey, `/svc/documents/${doc.id}`, undefined, 'DELETE')).status).toBe(404)
    await json(api(owner.testKey, `/svc/documents/${doc.id}`, undefined, 'DELETE'))
    expect((await retrieve(owner.testKey, 'ZEBRA-7781')).data).toEqual([])
  })

  it('a retrieve racing replacements sees one whole version, never both or neither', async () => {
    const ws = await createWorkspace('pro')
    const filler = 'It holds enough words to need a chunk of its own, '.repeat(5)
    const version = (v: number) =>
      Array.from({ length: 12 }, (_, i) => `Marker section ${i} of version V${v}. ${filler}`).join('\n\n')
    const first = await upload(ws.testKey, 'race.md', version(0))
    let writing = true
    const writes = (async () => {
      for (let v = 1; v <= 10; v++) await upload(ws.testKey, 'race.md', version(v))
      writing = false
    })()
    let reads = 0
    while (writing || reads < 5) {
      const found = await retrieve(ws.testKey, 'marker section version', 50)
      const versions = new Set(found.data.flatMap((h) => h.text.match(/V\d+/g)!))
      expect(versions.size, [...versions].join(' ')).toBe(1)
      expect(found.data).toHaveLength(first.chunk_count)
      reads++
    }
    await writes
  })

  it('live keys embed through the configured OpenAI-compatible provider; identical text is never re-embedded', async () => {
    const ws = await createWorkspace('pro')
    await embeddingsControl('/reset', {})
    const content = Array.from({ length: 30 }, (_, i) => `Runbook step ${i} restarts service ${i}.`).join(' ')
    const first = await upload(ws.liveKey, 'runbook.md', content)
    expect(first).toMatchObject({
      status: 'created',
      indexing_state: 'indexed',
      embedding_space: 'text-embedding-3-small@256',
    })
    const sent = (await embeddingRequests()).flatMap((r) => r.body.input)
    expect(sent).toHaveLength(first.chunk_count)
    await embeddingsControl('/reset', {})
    expect((await upload(ws.liveKey, 'runbook.md', content)).status).toBe('unchanged')
    const edited = await upload(ws.liveKey, 'runbook.md', `${content}\n\nA new closing paragraph.`)
    expect(edited.status).toBe('replaced')
    const resent = (await embeddingRequests()).flatMap((r) => r.body.input)
    expect(resent.length).toBeLessThan(edited.chunk_count)
    const found = await retrieve(ws.liveKey, 'runbok restartz', 1)
    expect(found.ranking.vector).toMatchObject({ state: 'used', backend: expectedBackend })
  })

  it('a failing provider: upload 502 with nothing stored, retrieve degrades to full text and says so', async () => {
    const ws = await createWorkspace('pro')
    await upload(ws.liveKey, 'kept.md', 'Escalations go to the on-call engineer.')
    await embeddingsControl('/fail', { failure: 'status_500' })
    try {
      const refused = await json<{ error: { code: string } }>(
        api(ws.liveKey, '/svc/documents/upload', { source: 'new.md', content: 'Never stored.' }),
        502,
      )
      expect(refused.error.code).toBe('embeddings_provider_failed')
      const list = await json<{ data: { source: string }[] }>(api(ws.liveKey, '/svc/documents'))
      expect(list.data.map((d) => d.source)).toEqual(['kept.md'])
      const found = await retrieve(ws.liveKey, 'on-call escalations', 1)
      expect(found.ranking.vector).toEqual({ state: 'unavailable', reason: 'embeddings_provider_failed' })
      expect(found.data[0]!.source).toBe('kept.md')
    } finally {
      await embeddingsControl('/reset', {})
    }
  })
})
