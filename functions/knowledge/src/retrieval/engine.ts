/**
 * The one retrieval engine of the knowledge family (documents and memories): two ranked signals
 * computed in Postgres and fused by reciprocal rank fusion.
 *
 * Lexical (always): Postgres full-text search on a generated `tsvector` (english configuration,
 * GIN index). Candidates match any word of the query (an OR of its lexemes, so a question still
 * finds passages that lack some of its words) and are scored
 *   ts_rank_cd(tsv, any word, 1) + 1 if every word matches (websearch_to_tsquery)
 *                                 + 1 if the text contains the query verbatim (case-insensitive)
 * so an identifier or exact phrase wins. When no text matches a single word, a verbatim substring
 * match is the fallback (a part of a word or of an identifier, e.g. "bernet" in "kubernetes").
 *
 * Vector (where an embedding space is given): cosine similarity of unit-length vectors.
 * - `pgvector`: `embedding::vector(n) <#> query` (negative inner product) served by the HNSW
 *   index of that dimension (migration 0004) with pgvector's iterative index scan, so a tenant's
 *   filter does not starve the result.
 * - `exact`: the dot product computed over `real[]` for every chunk of the tenant in that space: a
 *   brute-force scan with exactly the same ranking contract, for servers without pgvector.
 *
 * Fusion: score = Σ 1 / (RRF_K + rank) over the signals that ranked the item (rank from 1),
 * RRF_K = 60 as in Cormack et al. (2009); every item says which signal ranked it where.
 */
import { type SQL, sql } from 'drizzle-orm'
import type { Drizzle } from '../../../../shared/db/client'
import type { EmbeddingSpace } from './embeddings'

export const RRF_K = 60

export type VectorBackend = 'pgvector' | 'exact'

export interface RankedSignal {
  /** 1 = best. */
  rank: number
  score: number
}

export interface Candidate {
  id: string
  score: number
}

export interface FusedItem {
  id: string
  score: number
  lexical: RankedSignal | null
  vector: RankedSignal | null
}

/** Where the engine searches: a table of rows with an id, a text, its tsvector and a scope. */
export interface LexicalCorpus {
  table: SQL
  id: SQL
  text: SQL
  tsv: SQL
  /** The tenant (and owner) filter: never omitted. */
  scope: SQL
}

export interface VectorCorpus {
  table: SQL
  id: SQL
  embedding: SQL
  space: SQL
  dimensions: SQL
  scope: SQL
}

/** LIKE pattern of `text` matched verbatim (\, % and _ escaped). */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

export async function lexicalCandidates(
  db: Drizzle,
  corpus: LexicalCorpus,
  query: string,
  limit: number,
): Promise<Candidate[]> {
  const pattern = containsPattern(query)
  const result = await db.execute<{ id: string; score: number }>(sql`
    with q as (
      select websearch_to_tsquery('english', ${query}) as every_word,
        (select string_agg(quote_literal(w.lexeme), ' | ') from unnest(to_tsvector('english', ${query})) w)::tsquery as any_word
    )
    select ${corpus.id}::text as id,
      (ts_rank_cd(${corpus.tsv}, q.any_word, 1)
        + case when ${corpus.tsv} @@ q.every_word then 1 else 0 end
        + case when ${corpus.text} ilike ${pattern} then 1 else 0 end)::float8 as score
    from ${corpus.table}, q
    where ${corpus.scope} and ${corpus.tsv} @@ q.any_word
    order by score desc, ${corpus.id}
    limit ${limit}`)
  if (result.rows.length > 0) return result.rows.map((r) => ({ id: r.id, score: Number(r.score) }))
  const substring = await db.execute<{ id: string }>(sql`
    select ${corpus.id}::text as id from ${corpus.table}
    where ${corpus.scope} and ${corpus.text} ilike ${pattern}
    order by length(${corpus.text}), ${corpus.id}
    limit ${limit}`)
  return substring.rows.map((r) => ({ id: r.id, score: 1 }))
}

/** A vector as pgvector's text input (also accepted for `real[]` via `{...}`). */
function vectorLiteral(vector: readonly number[]): string {
  return `[${vector.join(',')}]`
}

export async function vectorCandidates(
  db: Drizzle,
  corpus: VectorCorpus,
  space: EmbeddingSpace,
  queryVector: readonly number[],
  limit: number,
  backend: VectorBackend,
): Promise<Candidate[]> {
  // The dimension is a number this code controls; written as a literal so the planner can match
  // the partial HNSW index of that dimension (`where embedding_dimensions = n`).
  const n = sql.raw(String(Math.trunc(space.dimensions)))
  const filter = sql`${corpus.scope} and ${corpus.dimensions} = ${n} and ${corpus.space} = ${space.id}`
  if (backend === 'pgvector') {
    const q = sql`${vectorLiteral(queryVector)}::vector(${n})`
    return db.transaction(async (tx) => {
      // Iterative scans keep reading the index until `limit` rows pass the tenant filter
      // (pgvector >= 0.8); relaxed order is re-sorted below. ef_search bounds each step's width.
      await tx.execute(sql`select set_config('hnsw.iterative_scan', 'relaxed_order', true),
        set_config('hnsw.ef_search', ${String(Math.min(1000, Math.max(40, limit * 2)))}, true)`)
      const result = await tx.execute<{ id: string; score: number }>(sql`
        select id, score from (
          select ${corpus.id}::text as id, (-(${corpus.embedding}::vector(${n}) <#> ${q}))::float8 as score
          from ${corpus.table}
          where ${filter}
          order by ${corpus.embedding}::vector(${n}) <#> ${q}
          limit ${limit}
        ) hits order by score desc, id`)
      return result.rows.map((r) => ({ id: r.id, score: Number(r.score) }))
    })
  }
  const q = sql`${`{${queryVector.join(',')}}`}::real[]`
  const result = await db.execute<{ id: string; score: number }>(sql`
    select ${corpus.id}::text as id,
      (select sum(e.a::float8 * e.b::float8) from unnest(${corpus.embedding}, ${q}) as e(a, b)) as score
    from ${corpus.table}
    where ${filter}
    order by score desc, id
    limit ${limit}`)
  return result.rows.map((r) => ({ id: r.id, score: Number(r.score) }))
}

/** Reciprocal rank fusion of the signals' lists (each best first), best first. */
export function fuse(lexical: readonly Candidate[], vector: readonly Candidate[] | null): FusedItem[] {
  const items = new Map<string, FusedItem>()
  const at = (id: string) => {
    let item = items.get(id)
    if (!item) {
      item = { id, score: 0, lexical: null, vector: null }
      items.set(id, item)
    }
    return item
  }
  lexical.forEach((c, i) => {
    const item = at(c.id)
    item.lexical = { rank: i + 1, score: c.score }
    item.score += 1 / (RRF_K + i + 1)
  })
  vector?.forEach((c, i) => {
    const item = at(c.id)
    item.vector = { rank: i + 1, score: c.score }
    item.score += 1 / (RRF_K + i + 1)
  })
  return [...items.values()].sort(
    (a, b) =>
      b.score - a.score ||
      (a.lexical?.rank ?? Number.POSITIVE_INFINITY) - (b.lexical?.rank ?? Number.POSITIVE_INFINITY) ||
      (a.id < b.id ? -1 : 1),
  )
}

/** How many candidates each signal contributes for a final top `k`. */
export function candidatePoolSize(k: number): number {
  return Math.min(200, Math.max(40, k * 4))
}

const backends = new Map<string, VectorBackend>()

/**
 * pgvector when the database has the extension installed, else the exact scan; asked once per
 * database per isolate (installing pgvector later takes effect on the next isolate).
 */
export async function vectorBackendOf(db: Drizzle, databaseKey: string): Promise<VectorBackend> {
  const known = backends.get(databaseKey)
  if (known) return known
  const result = await db.execute<{ installed: boolean }>(
    sql`select exists (select 1 from pg_extension where extname = 'vector') as installed`,
  )
  const backend: VectorBackend = result.rows[0]?.installed ? 'pgvector' : 'exact'
  backends.set(databaseKey, backend)
  return backend
}
