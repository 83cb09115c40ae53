/**
 * Document retrieval benchmark (docs/benchmarks.md, "Document retrieval"): retrieve latency at
 * 1k, 10k and 100k chunks per tenant on the embedded PGlite with pgvector (the product's local
 * database), beside the brute-force exact scan of the same data in the same run, the index each
 * query uses (EXPLAIN), recall of the HNSW index against the exact scan, and upload throughput.
 *
 *   flock /tmp/svc-e2e.lock npx tsx bench/retrieval.ts          # SIZES=1000,10000,100000 QUERIES=40
 *
 * It runs the product's own functions (functions/knowledge/src/documents/document-store.ts and
 * retrieval/engine.ts) through the Neon driver and the WebSocket bridge, as the knowledge worker
 * does, without the gateway in front (its cost is in "Gateway: authenticated routing"). Chunks are
 * bulk-loaded (synthetic text over a Zipf-distributed vocabulary, test-embedding vectors); upload
 * throughput is measured separately through uploadDocument, and so is what two concurrent 1 MiB
 * uploads cost another tenant (UPLOAD_CONTENTION_ONLY=1 runs that section alone).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { sql } from 'drizzle-orm'
import WebSocket from 'ws'
import {
  listDocuments,
  MAX_DOCUMENT_BYTES,
  retrieveChunks,
  uploadDocument,
} from '../functions/knowledge/src/documents/document-store.ts'
import { testEmbedder } from '../functions/knowledge/src/retrieval/embeddings.ts'
import {
  candidatePoolSize,
  lexicalCandidates,
  type VectorBackend,
  vectorCandidates,
} from '../functions/knowledge/src/retrieval/engine.ts'
import { testEmbedding } from '../functions/knowledge/src/retrieval/test-embedding.ts'
import { startEmbeddedPostgres } from '../scripts/db/embedded-postgres.ts'
import { runMigrations } from '../scripts/db/migrate.ts'
import { seedPlans } from '../scripts/db/seed.ts'
import { startWsBridge } from '../scripts/db/ws-bridge.ts'
import { type Drizzle, openDatabase, useWebSocketConstructor } from '../shared/db/client.ts'
import { documentChunks, documents, tenants } from '../shared/db/schema.ts'
import { resolvePlan } from '../shared/plans/plan-catalog.ts'
import { BENCH_DIR } from './bench-support.ts'

const CONTENTION_ONLY = process.env.UPLOAD_CONTENTION_ONLY === '1'
const SIZES = CONTENTION_ONLY ? [] : (process.env.SIZES ?? '1000,10000,100000').split(',').map(Number)
const QUERIES = Number(process.env.QUERIES ?? 40)
const K = 10
const CHUNKS_PER_DOCUMENT = 50

/** Deterministic pseudo-random numbers (the same corpus every run). */
function random(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0
    return s / 2 ** 32
  }
}

const next = random(42)
const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'ter',
  'sun',
  'vor',
  'ex',
  'pra',
  'dul',
  'nes',
  'qui',
  'bar',
  'tos',
  'gen',
  'fy',
]
const VOCABULARY = Array.from({ length: 3000 }, (_, i) => {
  let word = ''
  let n = i + 7
  do {
    word += SYLLABLES[n % SYLLABLES.length]
    n = Math.floor(n / SYLLABLES.length)
  } while (n > 0)
  return word
})
/** Zipf-like: word i is drawn with weight 1/(i+1). */
const CUMULATIVE = (() => {
  let sum = 0
  return VOCABULARY.map((_, i) => {
    sum += 1 / (i + 1)
    return sum
  })
})()
function word(): string {
  const x = next() * CUMULATIVE.at(-1)!
  let lo = 0
  let hi = CUMULATIVE.length - 1
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (CUMULATIVE[mid]! < x) lo = mid + 1
    else hi = mid
  }
  return VOCABULARY[lo]!
}
function sentence(): string {
  const words = Array.from({ length: 8 + Math.floor(next() * 10) }, word)
  return `${words.join(' ')}.`
}
function chunkText(): string {
  return Array.from({ length: 5 }, sentence).join(' ')
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

async function timed<T>(work: () => Promise<T>): Promise<[number, T]> {
  const start = performance.now()
  const result = await work()
  return [performance.now() - start, result]
}

async function load(db: Drizzle, tenantId: string, size: number): Promise<string[]> {
  const space = testEmbedder().space
  const texts: string[] = []
  for (let d = 0; d < size / CHUNKS_PER_DOCUMENT; d++) {
    const [doc] = await db
      .insert(documents)
      .values({
        tenantId,
        mode: 'live',
        source: `doc-${d}`,
        content: '(bulk-loaded)',
        contentSha256: `bulk-${d}`,
        sizeBytes: 0,
        characters: 0,
        chunkCount: CHUNKS_PER_DOCUMENT,
        embeddingSpace: space.id,
      })
      .returning({ id: documents.id })
    const rows = Array.from({ length: CHUNKS_PER_DOCUMENT }, (_, i) => {
      const text = chunkText()
      texts.push(text)
      return {
        documentId: doc!.id,
        tenantId,
        mode: 'live' as const,
        ordinal: i,
        startOffset: 0,
        endOffset: text.length,
        text,
        textSha256: `bulk-${d}-${i}`,
        embedding: testEmbedding(text),
        embeddingSpace: space.id,
        embeddingDimensions: space.dimensions,
      }
    })
    await db.insert(documentChunks).values(rows)
  }
  return texts
}

async function explain(db: Drizzle, query: ReturnType<typeof sql>): Promise<string> {
  const result = await db.execute<{ 'QUERY PLAN': string }>(sql`explain ${query}`)
  const plan = result.rows.map((r) => r['QUERY PLAN']).join('\n')
  // "Index Scan using <name>", "Index Only Scan using <name>", "Bitmap Index Scan on <name>".
  const indexes = [
    ...plan.matchAll(/(?:Index Only Scan|Index Scan)(?: Backward)? using (\w+)|Bitmap Index Scan on (\w+)/g),
  ].map((m) => m[1] ?? m[2])
  if (indexes.length > 0) return [...new Set(indexes)].join(', ')
  return /Seq Scan/.test(plan) ? 'seq scan' : plan.split('\n')[0]!.trim()
}

/**
 * Another tenant's request while two 1 MiB documents (about 1,050 chunks each) upload at once:
 * listDocuments (what GET /svc/documents runs) for a second tenant, one call after another on a
 * connection of its own, before the uploads and while they run. Each upload has its own pool, as
 * each request of the knowledge worker does. On PGlite a transaction holds the one session until
 * it ends, so the longest transaction an upload holds is about what the other tenant waits.
 */
async function uploadContention(
  env: Record<string, string>,
  embedder: ReturnType<typeof testEmbedder>,
  plan: ReturnType<typeof resolvePlan>,
  log: (line: string) => void,
): Promise<void> {
  const admin = openDatabase(env, { max: 1 })
  const other = openDatabase(env, { max: 1 })
  const uploaders = [openDatabase(env, { max: 4 }), openDatabase(env, { max: 4 })]
  try {
    const [uploading, bystander] = await admin.db
      .insert(tenants)
      .values([
        { name: 'bench big uploads', planId: 'enterprise' },
        { name: 'bench bystander', planId: 'enterprise' },
      ])
      .returning()
    await uploadDocument(
      admin.db,
      { tenantId: bystander!.id, mode: 'live' },
      { source: 'notes', content: chunkText() },
      { plan, embedder },
    )
    const bigDocument = (n: number) => {
      const paragraphs: string[] = []
      let length = 0
      for (;;) {
        const paragraph = Array.from({ length: 2 }, () => chunkText()).join(' ')
        if (length + paragraph.length + 2 > MAX_DOCUMENT_BYTES) break
        paragraphs.push(paragraph)
        length += paragraph.length + 2
      }
      return { source: `big-${n}`, content: paragraphs.join('\n\n') }
    }
    const request = async () => {
      const start = performance.now()
      await listDocuments(other.db, { tenantId: bystander!.id, mode: 'live' }, { limit: 20 })
      return performance.now() - start
    }
    const before: number[] = []
    for (let i = 0; i < 30; i++) before.push(await request())

    const during: number[] = []
    let uploadsDone = false
    const uploads = timed(() =>
      Promise.all(
        uploaders.map((pool, n) =>
          uploadDocument(pool.db, { tenantId: uploading!.id, mode: 'live' }, bigDocument(n), {
            plan,
            embedder,
          }),
        ),
      ).finally(() => {
        uploadsDone = true
      }),
    )
    while (!uploadsDone) during.push(await request())
    const [uploadMs, results] = await uploads
    const chunks = results.map((r) => r.document.chunkCount)
    log('')
    log(
      `Another tenant during two concurrent 1 MiB uploads (${chunks.join(' and ')} chunks, ${(uploadMs / 1000).toFixed(1)} s for both): listDocuments of a second tenant, one call after another:`,
    )
    log('')
    log('| | calls | p50 (ms) | p99 (ms) | max (ms) |')
    log('|---|---|---|---|---|')
    for (const [name, t] of [
      ['before the uploads', before],
      ['during the uploads', during],
    ] as const) {
      log(
        `| ${name} | ${t.length} | ${percentile(t, 50).toFixed(1)} | ${percentile(t, 99).toFixed(1)} | ${Math.max(...t).toFixed(1)} |`,
      )
    }
  } finally {
    await Promise.all([admin, other, ...uploaders].map((d) => d.close()))
  }
}

const main = async () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-retrieval-'))
  const pg = await startEmbeddedPostgres({ dataDir, statementTimeoutMs: 120_000 })
  const bridge = await startWsBridge({ target: { host: pg.host, port: pg.port } })
  const env = {
    DATABASE_URL: pg.connectionString,
    DATABASE_WS_PROXY: bridge.url,
    DATABASE_STATEMENT_TIMEOUT_MS: '120000',
  }
  await runMigrations(env)
  useWebSocketConstructor(WebSocket)
  const database = openDatabase(env, { max: 2 })
  const { db } = database
  await seedPlans(db)
  const embedder = testEmbedder()
  const plan = resolvePlan({}, 'enterprise')
  const lines: string[] = []
  const log = (line: string) => {
    console.log(line)
    lines.push(line)
  }
  log(`# Document retrieval benchmark ${new Date().toISOString()}`)
  log(
    `load average at start: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  )
  log('')
  log('| chunks per tenant | load (s) | signal | backend | index (EXPLAIN) | p50 (ms) | p99 (ms) |')
  log('|---|---|---|---|---|---|---|')
  const recalls: string[] = []

  try {
    for (const size of SIZES) {
      const [tenant] = await db
        .insert(tenants)
        .values({ name: `bench ${size}`, planId: 'enterprise' })
        .returning()
      const tenantId = tenant!.id
      const [loadMs, texts] = await timed(() => load(db, tenantId, size))
      await db.execute(sql`analyze document_chunks`)
      const scope = sql`${documentChunks.tenantId} = ${tenantId}`
      const lexicalCorpus = {
        table: sql`${documentChunks}`,
        id: sql`${documentChunks.id}`,
        text: sql`${documentChunks.text}`,
        tsv: sql`${documentChunks.tsv}`,
        scope,
      }
      const vectorCorpus = {
        table: sql`${documentChunks}`,
        id: sql`${documentChunks.id}`,
        embedding: sql`${documentChunks.embedding}`,
        space: sql`${documentChunks.embeddingSpace}`,
        dimensions: sql`${documentChunks.embeddingDimensions}`,
        scope,
      }
      // Queries: three words of a random stored chunk (so every query has matches).
      const pick = random(size)
      const queries = Array.from({ length: QUERIES }, () => {
        const words = texts[Math.floor(pick() * texts.length)]!.replace(/\./g, '').split(' ')
        const at = Math.floor(pick() * (words.length - 3))
        return words.slice(at, at + 3).join(' ')
      })
      const pool = candidatePoolSize(K)
      const timings: Record<string, number[]> = {}
      const record = (name: string, ms: number) => {
        timings[name] ??= []
        timings[name].push(ms)
      }
      let overlap = 0
      let poolOverlap = 0
      let index = 0
      for (const query of queries) {
        const [vector] = await embedder.embed([query])
        const [lexMs] = await timed(() => lexicalCandidates(db, lexicalCorpus, query, pool))
        record('lexical', lexMs)
        const hits: Record<VectorBackend | 'brute', string[]> = { pgvector: [], exact: [], brute: [] }
        // The real[] exact scan costs ~0.1 ms per chunk in PGlite: fewer queries at the largest size.
        const withExact = index < (size >= 100_000 ? Math.min(5, QUERIES) : QUERIES)
        for (const variant of ['pgvector', 'brute', ...(withExact ? ['exact' as const] : [])] as const) {
          const backend: VectorBackend = variant === 'exact' ? 'exact' : 'pgvector'
          const [ms, found] = await timed(() =>
            db.transaction(async (tx) => {
              // Brute force with pgvector: the same query with index scans off (a scan of every vector
              // of the tenant through its bitmap, sorted by distance).
              if (variant === 'brute')
                await tx.execute(sql`select set_config('enable_indexscan', 'off', true)`)
              return vectorCandidates(
                tx as unknown as Drizzle,
                vectorCorpus,
                embedder.space,
                vector!,
                K,
                backend,
              )
            }),
          )
          record(`vector ${variant}`, ms)
          hits[variant] = found.map((c) => c.id)
          if (variant !== 'brute') {
            const [hybridMs] = await timed(() =>
              retrieveChunks(
                db,
                { tenantId, mode: 'live' },
                { query, k: K },
                { embedder, backend: async () => backend },
              ),
            )
            record(`hybrid ${variant}`, hybridMs)
          }
        }
        overlap += hits.pgvector.filter((id) => hits.brute.includes(id)).length / K
        // What retrieval itself asks the index for: the candidate pool (wider ef_search), its top K.
        const pooled = await vectorCandidates(db, vectorCorpus, embedder.space, vector!, pool, 'pgvector')
        poolOverlap += pooled.slice(0, K).filter((c) => hits.brute.includes(c.id)).length / K
        index++
      }
      const [probe] = await embedder.embed([queries[0]!])
      const n = sql.raw(String(embedder.space.dimensions))
      const q = sql`${`[${probe!.join(',')}]`}::vector(${n})`
      const hnswIndex = await db.transaction(async (tx) => {
        await tx.execute(sql`select set_config('hnsw.iterative_scan', 'relaxed_order', true)`)
        return explain(
          tx as unknown as Drizzle,
          sql`select id from document_chunks where tenant_id = ${tenantId} and embedding_dimensions = ${n}
            and embedding_space = ${embedder.space.id} order by embedding::vector(${n}) <#> ${q} limit ${K}`,
        )
      })
      const lexIndex = await explain(
        db,
        sql`select id from document_chunks where tenant_id = ${tenantId}
          and tsv @@ (select string_agg(quote_literal(w.lexeme), ' | ') from unnest(to_tsvector('english', ${queries[0]!})) w)::tsquery`,
      )
      const rows: [string, string, string][] = [
        ['lexical', 'full text', lexIndex],
        ['vector pgvector', 'pgvector HNSW', hnswIndex],
        ['vector brute', 'brute force (pgvector, index off)', 'tenant bitmap, every vector'],
        ['vector exact', 'exact real[] scan (no pgvector)', 'tenant bitmap, every vector'],
        ['hybrid pgvector', 'fused, pgvector', 'both above'],
        ['hybrid exact', 'fused, exact scan', 'both above'],
      ]
      for (const [name, backend, index] of rows) {
        const t = timings[name]!
        log(
          `| ${size.toLocaleString('en')} | ${(loadMs / 1000).toFixed(0)} | ${name.split(' ')[0]} | ${backend} | ${index} | ${percentile(t, 50).toFixed(1)} | ${percentile(t, 99).toFixed(1)} (n=${t.length}) |`,
        )
      }
      recalls.push(
        `| ${size.toLocaleString('en')} | ${(overlap / queries.length).toFixed(3)} | ${(poolOverlap / queries.length).toFixed(3)} |`,
      )
    }
    if (!CONTENTION_ONLY) {
      log('')
      log(`HNSW recall@${K} against the brute-force scan (same queries):`)
      log('')
      log(
        `| chunks per tenant | recall@${K}, index asked for ${K} | recall@${K} of the pool of ${candidatePoolSize(K)} retrieval asks for |`,
      )
      log('|---|---|---|')
      for (const r of recalls) log(r)

      // Upload throughput through uploadDocument: ~6,000-character documents (about 7 chunks each),
      // test embedder, one at a time and 8 at once.
      const [tenant] = await db
        .insert(tenants)
        .values({ name: 'bench uploads', planId: 'enterprise' })
        .returning()
      const docs = Array.from({ length: 80 }, (_, i) => ({
        source: `upload-${i}`,
        content: Array.from({ length: 12 }, () => chunkText()).join('\n\n'),
      }))
      const chunksOf = async (ids: string[]) =>
        Number(
          (
            await db.execute<{ n: number }>(
              sql`select count(*)::int as n from document_chunks where document_id = any(${sql.param(ids)}::uuid[])`,
            )
          ).rows[0]!.n,
        )
      const [serialMs, serial] = await timed(async () => {
        const ids: string[] = []
        for (const doc of docs.slice(0, 40))
          ids.push(
            (await uploadDocument(db, { tenantId: tenant!.id, mode: 'live' }, doc, { plan, embedder }))
              .document.id,
          )
        return ids
      })
      const parallelDb = openDatabase(env, { max: 8 })
      const [parallelMs, parallel] = await timed(async () => {
        const ids: string[] = []
        const queue = docs.slice(40)
        await Promise.all(
          Array.from({ length: 8 }, async () => {
            for (let doc = queue.shift(); doc; doc = queue.shift())
              ids.push(
                (
                  await uploadDocument(parallelDb.db, { tenantId: tenant!.id, mode: 'live' }, doc, {
                    plan,
                    embedder,
                  })
                ).document.id,
              )
          }),
        )
        return ids
      })
      await parallelDb.close()
      log('')
      log('Uploads (uploadDocument: chunk, embed with the test embedder, one transaction):')
      log('')
      log('| concurrency | documents | chunks | documents/s | chunks/s |')
      log('|---|---|---|---|---|')
      for (const [c, ms, ids] of [
        [1, serialMs, serial],
        [8, parallelMs, parallel],
      ] as const) {
        const chunks = await chunksOf(ids)
        log(
          `| ${c} | ${ids.length} | ${chunks} | ${((ids.length * 1000) / ms).toFixed(1)} | ${((chunks * 1000) / ms).toFixed(0)} |`,
        )
      }
    }
    await uploadContention(env, embedder, plan, log)
    log('')
    log(
      `load average at end: ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    )
    const out = path.join(
      BENCH_DIR,
      'results',
      `retrieval-${new Date().toISOString().replace(/[-:]/g, '').slice(0, 15)}.md`,
    )
    writeFileSync(out, `${lines.join('\n')}\n`)
    console.log(`written ${path.relative(process.cwd(), out)}`)
  } finally {
    await database.close()
    await bridge.close()
    await pg.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
