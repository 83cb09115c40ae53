/**
 * A job's content at rest, as its object reads and writes it (docs/reasoning-jobs.md, "Content at
 * rest"; the crypto is content-crypto.ts): the prompt sealed before the job exists, the candidates'
 * texts opened for the steps and the owner's views, and the data key re-wrapped under the first
 * CONTENT_KEKS key when it was wrapped under another (rotation). The opened data key is kept per
 * wrapped value; erasure forgets it.
 */
import {
  type ContentCipher,
  contentCipher,
  contentKeyring,
  newWrappedDataKey,
  rewrapDataKey,
  wrappingKid,
} from './content-crypto'
import type { JobHost } from './job-host'
import type { CandidateRow, JobRow } from './reasoning-job.store'

/** The content name of a candidate's text (bound into its ciphertext's associated data). */
export function candidateName(idx: number): string {
  return `candidate:${idx}`
}

/** A new job's data key (wrapped) and its prompt sealed under it: no keys, no job (503). */
export async function sealNewPrompt(
  keks: string | undefined,
  place: { tenantId: string; jobId: string },
  prompt: string,
): Promise<{ wrappedKey: string; sealedPrompt: string }> {
  const ring = await contentKeyring(keks)
  const wrappedKey = await newWrappedDataKey(ring, place)
  const sealedPrompt = await (await contentCipher(ring, place, wrappedKey)).seal('prompt', prompt)
  return { wrappedKey, sealedPrompt }
}

export class JobContent {
  /** The opened data key, per keyring (cleared by erasure and rotation). */
  private cache: { wrapped: string; cipher: ContentCipher } | null = null

  constructor(private readonly host: Pick<JobHost, 'store' | 'workerEnv'>) {}

  /**
   * The job's content cipher: its data key unwrapped with CONTENT_KEKS. A data key wrapped under a
   * KEK that is no longer the first is re-wrapped under the first (rotation), before it is used.
   */
  async cipher(job: JobRow): Promise<ContentCipher> {
    const { store } = this.host
    const ring = await contentKeyring(this.host.workerEnv.CONTENT_KEKS)
    let wrapped = store.dataKey()
    if (wrapped === null) throw new Error('the job has no data key (erased)')
    const place = { tenantId: job.tenant_id, jobId: job.job_id }
    if (wrappingKid(wrapped) !== ring.firstKid) {
      const rewrapped = await rewrapDataKey(ring, place, wrapped)
      // Only if nothing replaced or erased it meanwhile (the read is the compare).
      if (store.dataKey() !== wrapped) return this.cipher(job)
      store.setDataKey(rewrapped)
      wrapped = rewrapped
    }
    if (this.cache?.wrapped !== wrapped) {
      this.cache = { wrapped, cipher: await contentCipher(ring, place, wrapped) }
    }
    return this.cache.cipher
  }

  async prompt(job: JobRow): Promise<string> {
    const prompt = this.host.store.content('prompt')
    if (prompt === null) throw new Error('the job has no prompt')
    return (await this.cipher(job)).open('prompt', prompt)
  }

  /** The stored candidates with their texts opened. */
  async openCandidates(job: JobRow): Promise<(CandidateRow & { content: string })[]> {
    const rows = this.host.store.candidates()
    if (rows.length === 0) return []
    const cipher = await this.cipher(job)
    return Promise.all(
      rows.map(async (c) => ({ ...c, content: await cipher.open(candidateName(c.idx), c.text) })),
    )
  }

  /** Erasure: the data key, the prompt and the candidates' texts go, and the opened key with them. */
  erase(): void {
    this.host.store.eraseContent()
    this.cache = null
  }
}
