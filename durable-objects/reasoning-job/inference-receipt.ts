/**
 * Inference receipts (docs/reasoning-jobs.md, "Inference receipts"): what a finished job did,
 * signed with the token keys (ML-DSA-65, by the auth worker's `sign` RPC; verify with the public
 * JWKS) as a DSSE envelope, and recorded in the tenant's audit log (`inference_receipt.issued`
 * with the digest of the signed payload), so a client can check offline both that the service
 * signed it and that it was logged.
 */
import { z } from '@hono/zod-openapi'
import { canonicalJson, sha256Hex } from '../../shared/crypto/digests'
import { DOCUMENT_SIGNING_ALGORITHM, type DocumentSigner, signDocument } from '../../shared/crypto/dsse'
import { utf8 } from '../../shared/crypto/encoding'

export type { DocumentSigner }

export const RECEIPT_PAYLOAD_TYPE = 'application/vnd.svc.inference-receipt.v1+json'
export const RECEIPT_TYPE = 'https://svc.dev/inference-receipt/v1'
export const RECEIPT_SIGNING_ALGORITHM = DOCUMENT_SIGNING_ALGORITHM

/** The signed statement: one definition, read back from storage with this schema. */
export const ReceiptStatementSchema = z
  .object({
    _type: z.literal(RECEIPT_TYPE),
    receipt_id: z.uuid(),
    issued_at: z.string(),
    job: z
      .object({
        id: z.uuid(),
        tenant_id: z.string(),
        model: z.string(),
        product: z.string(),
        scoring_method: z.string(),
        status: z.string(),
        created_at: z.string(),
        completed_at: z.string(),
      })
      .strict(),
    /** sha256 of the prompt; null when the content was erased before the receipt was written. */
    prompt_digest: z.string().nullable(),
    candidates: z.array(
      z
        .object({
          index: z.int().min(0),
          digest: z.string(),
          provider: z.string(),
          scores: z.record(z.string(), z.unknown()),
        })
        .strict(),
    ),
    selection: z
      .object({
        selected_index: z.int().min(0),
        selector_backend: z.string(),
        selector_confidence: z.number(),
        fallback_reason: z.string().nullable(),
        used_real_qubits: z.boolean(),
        real_request_status: z.string(),
      })
      .strict(),
    usage: z.record(z.string(), z.number()),
  })
  .strict()
export type ReceiptStatement = z.infer<typeof ReceiptStatementSchema>

/** A DSSE v1 envelope (payload and signatures in standard base64). */
export const ReceiptEnvelopeSchema = z
  .object({
    payloadType: z.literal(RECEIPT_PAYLOAD_TYPE),
    payload: z.string(),
    signatures: z.array(z.object({ keyid: z.string(), sig: z.string() }).strict()).min(1),
  })
  .strict()
export type ReceiptEnvelope = z.infer<typeof ReceiptEnvelopeSchema>

/** Where the receipt's `inference_receipt.issued` event sits in the tenant's audit log. */
export const ReceiptLogEntrySchema = z
  .object({ origin: z.string(), index: z.int().min(0), leaf_hash: z.string() })
  .strict()
export type ReceiptLogEntry = z.infer<typeof ReceiptLogEntrySchema>

/** GET /svc/quantum-reasoning/jobs/{jobId}/receipt: everything a client needs to verify offline. */
export const InferenceReceiptResponseSchema = z
  .object({
    object: z.literal('inference_receipt'),
    receipt_id: z.uuid(),
    envelope: ReceiptEnvelopeSchema,
    /** The envelope's payload, decoded (what was signed is the payload bytes, not this object). */
    statement: ReceiptStatementSchema,
    jwks_url: z.string(),
    audit_log: ReceiptLogEntrySchema,
  })
  .strict()
  .openapi('InferenceReceipt')
export type InferenceReceiptResponse = z.infer<typeof InferenceReceiptResponseSchema>

/** The payload bytes that are signed and digested: canonical JSON of the statement. */
export function receiptPayload(statement: ReceiptStatement): Uint8Array {
  return utf8.encode(canonicalJson(statement))
}

/** `sha256:<hex>` of the payload: the digest the audit event records. */
export function receiptDigest(payload: Uint8Array): string {
  return `sha256:${sha256Hex(payload)}`
}

export type SignedReceipt =
  | { ok: true; envelope: ReceiptEnvelope; kid: string }
  | { ok: false; code: string; message: string }

/** Signs the payload as a DSSE envelope with the token keys' ML-DSA-65 key. */
export function signReceipt(signer: DocumentSigner, payload: Uint8Array): Promise<SignedReceipt> {
  return signDocument(signer, RECEIPT_PAYLOAD_TYPE, payload)
}
