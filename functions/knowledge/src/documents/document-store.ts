/**
 * Tenant documents: the operations behind /svc/documents*, as plain functions over a database
 * and a scope (no HTTP), so other surfaces (the MCP server's document tools) run exactly the same
 * code. Every query filters by the scope's tenant and mode: test and live documents are separate
 * (a source, the document allowance, retrieval and embedding reuse are each per mode).
 *
 * Upload: chunk (chunking.ts), embed what is new (embeddings already stored for an identical
 * chunk text in the same embedding space are reused, never recomputed), then in ONE transaction
 * under a per-tenant-and-mode advisory lock: check the plan's document allowance (exact under concurrent
 * uploads), insert or replace the document row and swap its chunks, without their vectors.
 * Readers see the old document or the new one, never both or neither. The vectors follow in
 * statements of their own, and the document is `indexed` (its embedding space set) once every
 * chunk has its vector; until then it is `full_text_only`, and its chunks that already have a
 * vector are found by either signal. The provider is called before the transaction, so a failing
 * provider leaves nothing written.
 *
 * Why the vectors come after: the local database (PGlite) serves one session, and an open
 * transaction holds it, so every other tenant waits for an upload's transaction to end. Indexing a
 * chunk's vector (HNSW) costs about twice what its full text (GIN) does; written in the swap, the
 * vectors of a 1 MiB document (~1,050–1,350 chunks) held every tenant for seconds. Each statement
 * writes at most CHUNK_ROWS_PER_STATEMENT rows, so no statement of an upload holds the database for
 * long, and between them other tenants' statements run. (On a PostgreSQL server other tenants do
 * not wait for the transaction at all; the bound on each statement still holds there.)
 */
import { and, desc, eq, sql } from 'drizzle-orm'
import { sha256Hex } from '../../../../shared/crypto/digests'
import type { Drizzle } from '../../../../shared/db/client'
import { afterPageKey, decodePageCursor, encodePageCursor } from '../../../../shared/db/page-cursor'
import { documentChunks, documents } from '../../../../shared/db/schema'
import { AppError } from '../../../../shared/http/errors'
import { checkDocumentAllowance } from '../../../../shared/plans/entitlements'
import type { ResolvedPlan } from '../../../../shared/plans/plan-catalog'
import { actionRequiredError } from '../../../../shared/plans/upgrade-decision'
import { errorFields, log } from '../../../../shared/worker/log'
import type { TenantScope } from '../../../../shared/worker/request-context'
import type { Embedder } from '../retrieval/embeddings'
import {
  type Candidate,
  candidatePoolSize,
  type FusedItem,
  fuse,
  lexicalCandidates,
  type VectorBackend,
  vectorCandidates,
} from '../retrieval/engine'
import { type Chunk, chunkText } from './chunking'

/** Largest document content accepted, in UTF-8 bytes (the route's body limit is 2 MiB). */
export const MAX_DOCUMENT_BYTES = 1024 * 1024
/**
 * Most chunk rows one statement of an upload inserts or gives vectors to: about 0.1–0.4 s of the
 * local database's one session (measured: 100 rows took 0.4–1.6 s on PGlite on a loaded machine).
 */
export const CHUNK_ROWS_PER_STATEMENT = 25

export type DocumentScope = TenantScope

const scopedDocuments = (scope: DocumentScope) =>
  and(eq(documents.tenantId, scope.tenantId), eq(documents.mode, scope.mode))!
const scopedChunks = (scope: DocumentScope) =>
  and(eq(documentChunks.tenantId, scope.tenantId), eq(documentChunks.mode, scope.mode))!

export type IndexingState = 'indexed' | 'full_text_only' | 'stale_embeddings'

type DocumentRow = typeof documents.$inferSelect

export interface DocumentRecord {
  id: string
  source: string
  sizeBytes: number
  characters: number
  chunkCount: number
  embeddingSpace: string | null
  createdAt: Date
  updatedAt: Date
}

function recordOf(row: Pick<DocumentRow, keyof DocumentRecord>): DocumentRecord {
  return {
    id: row.id,
    source: row.source,
    sizeBytes: row.sizeBytes,
    characters: row.characters,
    chunkCount: row.chunkCount,
    embeddingSpace: row.embeddingSpace,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  }
}

/** How a document is indexed, as seen by a caller whose embeddings live in `currentSpace`. */
export function indexingState(embeddingSpace: string | null, currentSpace: string | null): IndexingState {
  if (embeddingSpace === null) return 'full_text_only'
  return currentSpace !== null && currentSpace !== embeddingSpace ? 'stale_embeddings' : 'indexed'
}

export interface UploadInput {
  source: string
  content: string
}

export interface UploadResult {
  document: DocumentRecord
  status: 'created' | 'replaced' | 'unchanged'
  /** Chunks embedded by the provider for this upload. */
  embeddedChunks: number
  /** Chunks whose stored embedding (identical text, same space) was reused. */
  reusedEmbeddings: number
}

/** 400/413 for content the product does not store (checked before any work). */
export function checkUploadInput(input: UploadInput): void {
  const bytes = new TextEncoder().encode(input.content).byteLength
  if (bytes > MAX_DOCUMENT_BYTES) {
    throw new AppError(
      413,
      'document_too_large',
      `content is ${bytes} bytes of UTF-8; a document holds at most ${MAX_DOCUMENT_BYTES} bytes (1 MiB). Split it into several documents with their own source.`,
      { param: 'content' },
    )
  }
  if (input.content.trim() === '') {
    throw new AppError(400, 'empty_document', 'content must contain some text (got only whitespace).', {
      param: 'content',
    })
  }
  if (input.source.trim() === '') {
    throw new AppError(400, 'invalid_source', 'source must name the document (got only whitespace).', {
      param: 'source',
    })
  }
}

function allowanceError(plan: ResolvedPlan, stored: number): AppError | null {
  const decision = checkDocumentAllowance(plan.plan, stored, { catalog: plan.catalog })
  if (!decision) return null
  return actionRequiredError(decision, { catalog: plan.catalog, param: null })
}

export async function uploadDocument(
  db: Drizzle,
  scope: DocumentScope,
  input: UploadInput,
  options: { plan: ResolvedPlan; embedder: Embedder | null },
): Promise<UploadResult> {
  checkUploadInput(input)
  const { tenantId, mode } = scope
  const space = options.embedder?.space ?? null
  const contentSha256 = sha256Hex(input.content)

  const [existing] = await db
    .select()
    .from(documents)
    .where(and(scopedDocuments(scope), eq(documents.source, input.source)))
  if (
    existing &&
    existing.contentSha256 === contentSha256 &&
    existing.embeddingSpace === (space?.id ?? null)
  ) {
    return { document: recordOf(existing), status: 'unchanged', embeddedChunks: 0, reusedEmbeddings: 0 }
  }
  if (!existing) {
    // Early answer before any embedding is paid for; the transaction below decides exactly.
    const stored = await countDocuments(db, scope)
    const refused = allowanceError(options.plan, stored)
    if (refused) throw refused
  }

  const chunks = chunkText(input.content)
  const shas = chunks.map((c) => sha256Hex(c.text))
  const vectors = options.embedder ? await embedChunks(db, scope, options.embedder, chunks, shas) : null

  const characters = input.content.length
  const sizeBytes = new TextEncoder().encode(input.content).byteLength
  const swapped = await db.transaction(async (tx) => {
    // One upload at a time per tenant and mode: the allowance count and the insert cannot interleave.
    await tx.execute(
      sql`select pg_advisory_xact_lock(hashtextextended(${`svc.documents:${tenantId}:${mode}`}, 0))`,
    )
    const [current] = await tx
      .select({
        id: documents.id,
        contentSha256: documents.contentSha256,
        embeddingSpace: documents.embeddingSpace,
      })
      .from(documents)
      .where(and(scopedDocuments(scope), eq(documents.source, input.source)))
    if (!current) {
      const refused = allowanceError(options.plan, await countDocuments(tx as unknown as Drizzle, scope))
      if (refused) throw refused
    }
    const values = {
      tenantId,
      mode,
      source: input.source,
      content: input.content,
      contentSha256,
      sizeBytes,
      characters,
      chunkCount: chunks.length,
      // Set once every chunk has its vector (below).
      embeddingSpace: null,
    }
    const [row] = current
      ? await tx
          .update(documents)
          .set({ ...values, updatedAt: sql`now()` })
          .where(and(eq(documents.id, current.id), scopedDocuments(scope)))
          .returning()
      : await tx.insert(documents).values(values).returning()
    const document = row!
    if (current) await tx.delete(documentChunks).where(eq(documentChunks.documentId, document.id))
    const rows = chunks.map((chunk, i) => ({
      documentId: document.id,
      tenantId,
      mode,
      ordinal: chunk.ordinal,
      startOffset: chunk.start,
      endOffset: chunk.end,
      text: chunk.text,
      textSha256: shas[i]!,
    }))
    const ids: string[] = []
    for (let i = 0; i < rows.length; i += CHUNK_ROWS_PER_STATEMENT) {
      const inserted = await tx
        .insert(documentChunks)
        .values(rows.slice(i, i + CHUNK_ROWS_PER_STATEMENT))
        .returning({ id: documentChunks.id })
      ids.push(...inserted.map((r) => r.id))
    }
    return { document, ids, replaced: current !== undefined }
  })

  let document = swapped.document
  if (vectors && space) {
    for (let i = 0; i < swapped.ids.length; i += CHUNK_ROWS_PER_STATEMENT) {
      const batch = swapped.ids.slice(i, i + CHUNK_ROWS_PER_STATEMENT).map((id, j) => ({
        id,
        embedding: vectors.vectors[i + j]!,
      }))
      await setChunkVectors(db, scope, space, batch)
    }
    // Indexed only when every chunk has its vector: a concurrent replacement of the same document
    // swaps in chunks of its own, and marks the document when their vectors are in.
    const [marked] = await db
      .update(documents)
      .set({ embeddingSpace: space.id })
      .where(
        and(
          eq(documents.id, document.id),
          scopedDocuments(scope),
          eq(documents.contentSha256, contentSha256),
          sql`not exists (select 1 from ${documentChunks} where ${documentChunks.documentId} = ${document.id} and ${documentChunks.embedding} is null)`,
        ),
      )
      .returning()
    document = marked ?? document
  }
  return {
    document: recordOf(document),
    status: swapped.replaced ? 'replaced' : 'created',
    embeddedChunks: vectors?.embedded ?? 0,
    reusedEmbeddings: vectors?.reused ?? 0,
  }
}

/** Gives chunks their vectors in one statement (at most CHUNK_ROWS_PER_STATEMENT of them). */
async function setChunkVectors(
  db: Drizzle,
  scope: DocumentScope,
  space: { id: string; dimensions: number },
  batch: readonly { id: string; embedding: readonly number[] }[],
): Promise<void> {
  const list = sql.join(
    batch.map((chunk) => sql`(${chunk.id}::uuid, ${sql.param(chunk.embedding)}::real[])`),
    sql`, `,
  )
  await db.execute(sql`
    update ${documentChunks} as c
    set embedding = v.embedding, embedding_space = ${space.id}, embedding_dimensions = ${space.dimensions}
    from (values ${list}) as v(id, embedding)
    where c.id = v.id and c.tenant_id = ${scope.tenantId} and c.mode = ${scope.mode}`)
}

async function countDocuments(db: Drizzle, scope: DocumentScope): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(documents)
    .where(scopedDocuments(scope))
  return row?.n ?? 0
}

/** Vectors for the chunks: stored ones for identical texts in the same space, the rest embedded. */
async function embedChunks(
  db: Drizzle,
  scope: DocumentScope,
  embedder: Embedder,
  chunks: readonly Chunk[],
  shas: readonly string[],
): Promise<{ vectors: number[][]; embedded: number; reused: number }> {
  const known = new Map<string, number[]>()
  if (shas.length > 0) {
    const stored = await db
      .selectDistinctOn([documentChunks.textSha256], {
        sha: documentChunks.textSha256,
        embedding: documentChunks.embedding,
      })
      .from(documentChunks)
      .where(
        and(
          scopedChunks(scope),
          eq(documentChunks.embeddingSpace, embedder.space.id),
          sql`${documentChunks.textSha256} = any(${sql.param([...new Set(shas)])}::text[])`,
        ),
      )
    for (const row of stored) if (row.embedding) known.set(row.sha, row.embedding)
  }
  const missing = [...new Set(shas.filter((sha) => !known.has(sha)))]
  const textOf = new Map(shas.map((sha, i) => [sha, chunks[i]!.text]))
  const fresh = await embedder.embed(missing.map((sha) => textOf.get(sha)!))
  const stored = new Set(known.keys())
  for (const [i, sha] of missing.entries()) known.set(sha, fresh[i]!)
  return {
    vectors: shas.map((sha) => known.get(sha)!),
    embedded: missing.length,
    reused: shas.filter((sha) => stored.has(sha)).length,
  }
}

export interface DocumentPage {
  documents: DocumentRecord[]
  nextCursor: string | null
}

/** The scope's documents, newest first (by creation; a replaced document keeps its place). */
export async function listDocuments(
  db: Drizzle,
  scope: DocumentScope,
  page: { limit: number; after?: string | undefined },
): Promise<DocumentPage> {
  // created_at as text: the cursor keeps its microseconds (a JSON timestamp has milliseconds only).
  const after = page.after === undefined ? null : decodePageCursor(page.after, 'after')
  const rows = await db
    .select({
      id: documents.id,
      source: documents.source,
      sizeBytes: documents.sizeBytes,
      characters: documents.characters,
      chunkCount: documents.chunkCount,
      embeddingSpace: documents.embeddingSpace,
      createdAt: documents.createdAt,
      updatedAt: documents.updatedAt,
      cursorAt: sql<string>`${documents.createdAt}::text`,
    })
    .from(documents)
    .where(
      and(scopedDocuments(scope), after ? afterPageKey(documents.createdAt, documents.id, after) : undefined),
    )
    .orderBy(desc(documents.createdAt), desc(documents.id))
    .limit(page.limit + 1)
  const shown = rows.slice(0, page.limit)
  const last = shown.at(-1)
  return {
    documents: shown.map(recordOf),
    nextCursor:
      rows.length > page.limit && last ? encodePageCursor({ createdAt: last.cursorAt, id: last.id }) : null,
  }
}

export interface StoredChunk {
  ordinal: number
  start: number
  end: number
  text: string
  embedded: boolean
}

export async function getDocument(
  db: Drizzle,
  scope: DocumentScope,
  id: string,
): Promise<{ document: DocumentRecord; chunks: StoredChunk[] } | null> {
  const [row] = await db
    .select()
    .from(documents)
    .where(and(scopedDocuments(scope), eq(documents.id, id)))
  if (!row) return null
  const chunks = await db
    .select({
      ordinal: documentChunks.ordinal,
      start: documentChunks.startOffset,
      end: documentChunks.endOffset,
      text: documentChunks.text,
      embedded: sql<boolean>`${documentChunks.embedding} is not null`,
    })
    .from(documentChunks)
    .where(and(scopedChunks(scope), eq(documentChunks.documentId, id)))
    .orderBy(documentChunks.ordinal)
  return { document: recordOf(row), chunks }
}

/** Deletes the document with its chunks and their vectors; false when the scope has no such document. */
export async function deleteDocument(db: Drizzle, scope: DocumentScope, id: string): Promise<boolean> {
  const deleted = await db
    .delete(documents)
    .where(and(scopedDocuments(scope), eq(documents.id, id)))
    .returning({ id: documents.id })
  return deleted.length > 0
}

export type VectorSignalState =
  | { state: 'used'; backend: VectorBackend; embeddingSpace: string }
  | { state: 'unavailable'; reason: 'no_embeddings_provider' | 'embeddings_provider_failed' }

export interface RetrievedChunk {
  documentId: string
  source: string
  ordinal: number
  start: number
  end: number
  text: string
  fused: FusedItem
}

export interface Retrieval {
  chunks: RetrievedChunk[]
  vector: VectorSignalState
}

/**
 * The k chunks of the scope's documents most relevant to `query`. The query is embedded first
 * (a failing provider degrades this answer to full-text and says so); then both signals and the
 * chunks' contents are read in one read-only snapshot, so a concurrent replacement is seen whole
 * or not at all.
 */
export async function retrieveChunks(
  db: Drizzle,
  scope: DocumentScope,
  request: { query: string; k: number },
  options: { embedder: Embedder | null; backend: () => Promise<VectorBackend> },
): Promise<Retrieval> {
  const { embedder } = options
  let queryVector: number[] | null = null
  let vector: VectorSignalState = { state: 'unavailable', reason: 'no_embeddings_provider' }
  if (embedder) {
    try {
      ;[queryVector] = (await embedder.embed([request.query])) as [number[]]
    } catch (err) {
      if (!(err instanceof AppError) || err.status !== 502) throw err
      log('warn', 'embeddings_provider_failed', errorFields(err))
      vector = { state: 'unavailable', reason: 'embeddings_provider_failed' }
    }
  }
  const backend = queryVector ? await options.backend() : null
  const pool = candidatePoolSize(request.k)
  const scopeOf = sql`${documentChunks.tenantId} = ${scope.tenantId} and ${documentChunks.mode} = ${scope.mode}`
  return db.transaction(
    async (tx) => {
      const q = tx as unknown as Drizzle
      const lexical = await lexicalCandidates(
        q,
        {
          table: sql`${documentChunks}`,
          id: sql`${documentChunks.id}`,
          text: sql`${documentChunks.text}`,
          tsv: sql`${documentChunks.tsv}`,
          scope: scopeOf,
        },
        request.query,
        pool,
      )
      let vectorHits: Candidate[] | null = null
      if (queryVector && embedder && backend) {
        vectorHits = await vectorCandidates(
          q,
          {
            table: sql`${documentChunks}`,
            id: sql`${documentChunks.id}`,
            embedding: sql`${documentChunks.embedding}`,
            space: sql`${documentChunks.embeddingSpace}`,
            dimensions: sql`${documentChunks.embeddingDimensions}`,
            scope: scopeOf,
          },
          embedder.space,
          queryVector,
          pool,
          backend,
        )
        vector = { state: 'used', backend, embeddingSpace: embedder.space.id }
      }
      const top = fuse(lexical, vectorHits).slice(0, request.k)
      if (top.length === 0) return { chunks: [], vector }
      const rows = await q
        .select({
          id: documentChunks.id,
          documentId: documentChunks.documentId,
          source: documents.source,
          ordinal: documentChunks.ordinal,
          start: documentChunks.startOffset,
          end: documentChunks.endOffset,
          text: documentChunks.text,
        })
        .from(documentChunks)
        .innerJoin(documents, eq(documents.id, documentChunks.documentId))
        .where(
          and(
            scopedChunks(scope),
            sql`${documentChunks.id} = any(${sql.param(top.map((t) => t.id))}::uuid[])`,
          ),
        )
      const byId = new Map(rows.map((r) => [r.id, r]))
      const chunks = top.flatMap((fused) => {
        const row = byId.get(fused.id)
        return row ? [{ ...row, fused }] : []
      })
      return { chunks, vector }
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  )
}
