/**
 * A finished job's inference receipt (docs/reasoning-jobs.md, "Inference receipts"; the format is
 * inference-receipt.ts): the statement of what the job did, signed by the auth worker with the
 * token keys and recorded in the tenant's audit log, and read back by its owner.
 */

import { sha256Hex } from '../../shared/crypto/digests'
import { base64Encode } from '../../shared/crypto/encoding'
import { AppError } from '../../shared/http/errors'
import { refused } from '../../shared/worker/log'
import { appendAuditEvent } from '../audit-log/audit-client'
import {
  RECEIPT_SIGNING_ALGORITHM,
  RECEIPT_TYPE,
  type ReceiptStatement,
  receiptDigest,
  receiptPayload,
  signReceipt,
} from './inference-receipt'
import { isTerminal, SCORING_METHOD_OF } from './job.schemas'
import { type JobCaller, jobNotFound, type ReceiptReply, visibleTo } from './job-calls'
import type { JobContent } from './job-content'
import { iso, type JobHost } from './job-host'
import type { JobViews } from './job-view'
import type { JobRow } from './reasoning-job.store'

export class JobReceipts {
  constructor(
    private readonly host: JobHost,
    private readonly content: JobContent,
    private readonly views: JobViews,
  ) {}

  /**
   * issue_receipt: signs the finished job's inference receipt and records it in the tenant's audit
   * log, in three stored steps (the statement, the envelope, the log entry), so a retry after a
   * crash signs the same statement and appends it once (the log's idempotency key is the receipt
   * id). The job names the receipt only once it is logged.
   */
  async issue(): Promise<void> {
    const { store, workerEnv: env } = this.host
    const job = store.job()
    if (
      !job ||
      job.receipt_id !== null ||
      !(job.status === 'completed' || job.status === 'classical_fallback')
    ) {
      store.unschedule('issue_receipt')
      return
    }
    if (!store.receipt()) store.createReceipt(await this.statement(job))
    let receipt = store.receipt()!
    if (receipt.envelope_json === null || receipt.kid === null) {
      if (!env.AUTH) throw new Error('the AUTH binding is missing: inference receipts cannot be signed')
      const signed = await signReceipt(env.AUTH, receiptPayload(receipt.statement_json))
      if (!signed.ok) throw new Error(`signing the inference receipt: ${signed.code}: ${signed.message}`)
      store.setReceiptEnvelope(signed.envelope, signed.kid)
      receipt = store.receipt()!
    }
    if (receipt.log_json === null) {
      const entry = await appendAuditEvent(
        env.AUDIT_LOG,
        job.tenant_id,
        {
          kind: 'inference_receipt.issued',
          receipt_id: receipt.receipt_id,
          receipt_digest: receiptDigest(receiptPayload(receipt.statement_json)),
          subject: `reasoning_job:${job.job_id}`,
          kid: receipt.kid!,
          alg: RECEIPT_SIGNING_ALGORITHM,
          request_id: job.request_id,
        },
        { idempotencyKey: `inference-receipt:${receipt.receipt_id}` },
      )
      store.setReceiptLog({ origin: entry.log, index: entry.index, leaf_hash: base64Encode(entry.leafHash) })
    }
    this.host.commit({ receipt_id: receipt.receipt_id }, this.host.now())
    store.unschedule('issue_receipt')
  }

  /** What the receipt states: the job, what each candidate was (digests) and scored, the choice, usage. */
  private async statement(job: JobRow): Promise<ReceiptStatement> {
    const usage = this.views.view(job, false).then((v) => v.usage)
    return {
      _type: RECEIPT_TYPE,
      receipt_id: crypto.randomUUID(),
      issued_at: iso(this.host.now()),
      job: {
        id: job.job_id,
        tenant_id: job.tenant_id,
        model: job.model,
        product: job.product,
        scoring_method: SCORING_METHOD_OF[job.model],
        status: job.status,
        created_at: iso(job.created_at),
        completed_at: iso(job.completed_at ?? job.updated_at),
      },
      prompt_digest: job.erased_at === null ? `sha256:${sha256Hex(await this.content.prompt(job))}` : null,
      candidates: this.host.store.candidates().map((c) => ({
        index: c.idx,
        digest: c.digest,
        provider: c.provider,
        scores: c.evidence_json ?? {},
      })),
      selection: {
        selected_index: job.selected_index ?? 0,
        selector_backend: job.selector_backend ?? 'none',
        selector_confidence: job.selector_confidence ?? 0,
        fallback_reason: job.fallback_reason,
        used_real_qubits: job.real_request_status === 'executed',
        real_request_status: job.real_request_status,
      },
      usage: await usage,
    }
  }

  /** GET .../receipt: the signed receipt and where it is logged; 404 until it is issued. */
  read(caller: JobCaller, jwksUrl: string): ReceiptReply {
    const { store } = this.host
    const job = store.job()
    if (!job || !visibleTo(job, caller)) return refused(jobNotFound())
    const receipt = store.receipt()
    if (job.receipt_id === null || !receipt?.envelope_json || !receipt.log_json) {
      return refused(
        new AppError(
          404,
          'receipt_not_issued',
          `This job has no inference receipt ${isTerminal(job.status) ? 'yet' : 'until it completes'}: receipts are issued for completed and classical_fallback jobs, moments after they finish (the job's inference_receipt_id names it then).`,
          { param: 'jobId' },
        ),
      )
    }
    return {
      ok: true,
      receipt: {
        object: 'inference_receipt',
        receipt_id: receipt.receipt_id,
        envelope: receipt.envelope_json,
        statement: receipt.statement_json,
        jwks_url: jwksUrl,
        audit_log: receipt.log_json,
      },
    }
  }
}
