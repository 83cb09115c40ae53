/**
 * Retrieval quality on the labelled set (bench/retrieval/labelled-set.json): recall@k of the
 * lexical signal alone, the vector signal alone (the test embedding) and the fused ranking, per
 * kind of query. Prints the table docs/benchmarks.md records; asserts what the design promises:
 * identifiers are found first by full text, misspellings by vectors, and fusion keeps the best of
 * both. Paraphrases need a real embedding model: their numbers are reported, not asserted.
 */
import { sql } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import labelled from '../../../../bench/retrieval/labelled-set.json'
import { documentChunks, documents } from '../../../../shared/db/schema'
import { resolvePlan } from '../../../../shared/plans/plan-catalog'
import { createTenant, withTestDatabase } from '../../../../test/unit/database'
import { uploadDocument } from '../documents/document-store'
import { testEmbedder } from './embeddings'
import { type Candidate, candidatePoolSize, fuse, lexicalCandidates, vectorCandidates } from './engine'

type Signal = 'lexical' | 'vector' | 'fused'
const KS = [1, 3, 5] as const

describe('retrieval quality on the labelled set', () => {
  it('reports recall@k per signal and kind of query', async () => {
    const tenantId = await createTenant('enterprise')
    const embedder = testEmbedder()
    const plan = resolvePlan({}, 'enterprise')
    const ranked = await withTestDatabase(async (db) => {
      for (const doc of labelled.documents)
        await uploadDocument(db, { tenantId, mode: 'live' }, doc, { plan, embedder })
      const sourceOf = new Map(
        (
          await db
            .select({ id: documentChunks.id, source: documents.source })
            .from(documentChunks)
            .innerJoin(documents, sql`${documents.id} = ${documentChunks.documentId}`)
            .where(sql`${documentChunks.tenantId} = ${tenantId}`)
        ).map((r) => [r.id, r.source]),
      )
      const scope = sql`${documentChunks.tenantId} = ${tenantId}`
      const out: { kind: string; answer: string; lists: Record<Signal, string[]> }[] = []
      for (const q of labelled.queries) {
        const pool = candidatePoolSize(5)
        const lexical = await lexicalCandidates(
          db,
          {
            table: sql`${documentChunks}`,
            id: sql`${documentChunks.id}`,
            text: sql`${documentChunks.text}`,
            tsv: sql`${documentChunks.tsv}`,
            scope,
          },
          q.query,
          pool,
        )
        const [vector] = await embedder.embed([q.query])
        const vectorHits: Candidate[] = await db.transaction((tx) =>
          vectorCandidates(
            tx as unknown as typeof db,
            {
              table: sql`${documentChunks}`,
              id: sql`${documentChunks.id}`,
              embedding: sql`${documentChunks.embedding}`,
              space: sql`${documentChunks.embeddingSpace}`,
              dimensions: sql`${documentChunks.embeddingDimensions}`,
              scope,
            },
            embedder.space,
            vector!,
            pool,
            'pgvector',
          ),
        )
        const names = (ids: { id: string }[]) => ids.map((c) => sourceOf.get(c.id)!)
        out.push({
          kind: q.kind,
          answer: q.answer,
          lists: {
            lexical: names(lexical),
            vector: names(vectorHits),
            fused: names(fuse(lexical, vectorHits)),
          },
        })
      }
      return out
    })

    const recall = (kind: string | null, signal: Signal, k: number) => {
      const rows = ranked.filter((r) => kind === null || r.kind === kind)
      return rows.filter((r) => r.lists[signal].slice(0, k).includes(r.answer)).length / rows.length
    }
    const kinds = [...new Set(labelled.queries.map((q) => q.kind)), null]
    const lines = ['| queries | n | signal | recall@1 | recall@3 | recall@5 |', '|---|---|---|---|---|---|']
    for (const kind of kinds) {
      const n = labelled.queries.filter((q) => kind === null || q.kind === kind).length
      for (const signal of ['lexical', 'vector', 'fused'] as const) {
        lines.push(
          `| ${kind ?? 'all'} | ${n} | ${signal} | ${KS.map((k) => recall(kind, signal, k).toFixed(2)).join(' | ')} |`,
        )
      }
    }
    console.log(lines.join('\n'))

    expect(recall('identifier', 'lexical', 1)).toBe(1)
    expect(recall('identifier', 'fused', 1)).toBe(1)
    expect(recall('typo', 'vector', 3)).toBeGreaterThan(recall('typo', 'lexical', 3))
    expect(recall('typo', 'fused', 3)).toBeGreaterThanOrEqual(recall('typo', 'vector', 3))
    for (const k of KS) {
      expect(recall(null, 'fused', k)).toBeGreaterThanOrEqual(
        Math.max(recall(null, 'lexical', k), recall(null, 'vector', k)),
      )
    }
  })
})
