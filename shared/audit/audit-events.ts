/**
 * What the audit logs record: one zod schema per security-relevant event, discriminated by `kind`.
 * Every worker appends through `appendAuditEvent` (audit-client.ts), which validates against this
 * schema; the AuditLog object stores each event inside an entry (below) whose canonical JSON bytes
 * are the Merkle leaf. Add a kind here (one definition) when a feature needs a new event; keep the
 * fields to what a reviewer needs, never a secret (no key material, no token, no password).
 *
 * `actor` / `principal`: who acted, as the platform writes it elsewhere: `key:<api key id>`,
 * `user:<uuid>`, `sa:<uuid>`, or `system:<component>` for the platform itself.
 */
import { z } from 'zod'
import { AUDIENCES } from '../db/schema'

const text = (max = 200) => z.string().min(1).max(max)
const actor = text().describe('who acted: key:<id>, user:<uuid>, sa:<uuid> or system:<component>')
const requestId = text().describe('x-request-id of the request that caused the event')
const digest = z.string().regex(/^(sha256|sha384|sha512):[0-9a-f]+$/, 'digest as <algorithm>:<hex>')
const isoTime = z.string().datetime({ offset: true })
const lifecycle = <K extends string>(kinds: readonly [K, ...K[]]) => z.enum(kinds)

const FailedRule = z.object({ rule: text(64), detail: text(500) }).strict()

export const AuditEventSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('crypto_policy.changed'),
      actor,
      request_id: requestId,
      preset: z.string().nullable(),
      mode: z.enum(['audit', 'enforce']),
      enabled: z.boolean(),
      policy_digest: digest,
      previous_policy_digest: digest.nullable(),
    })
    .strict(),
  z
    .object({
      kind: z.literal('crypto_policy.decision'),
      /** logged: a violation audit mode let through; blocked: refused in enforce mode. */
      outcome: z.enum(['logged', 'blocked']),
      algorithm: text(64),
      requested: text(64),
      context: text(64),
      mode: z.enum(['audit', 'enforce']),
      rules: z.array(FailedRule).max(16),
      principal: actor,
      request_id: requestId,
      method: text(10),
      path: text(500),
    })
    .strict(),
  z
    .object({
      kind: z.literal('token.issued'),
      subject: actor,
      audience: z.enum(AUDIENCES),
      alg: text(32),
      kid: text(100),
      token_id: text(100),
      grant: z.enum(['password', 'refresh_token', 'client_credentials', 'authorization_code']),
      /** OAuth tokens: the resource the token is bound to (RFC 8707), the client and the scope granted. */
      resource: text(2048).optional(),
      client_id: text(256).optional(),
      scope: text(1024).optional(),
      expires_at: isoTime,
      request_id: requestId,
    })
    .strict(),
  z
    .object({
      kind: z.literal('refresh_token.family_revoked'),
      subject: actor,
      family_id: z.string().uuid(),
      reason: z.enum(['reuse_detected', 'membership_ended', 'authorization_code_reused']),
      request_id: requestId,
    })
    .strict(),
  z
    .object({
      kind: z.literal('signing_keys.changed'),
      /** Which key set: the token keys (auth worker) or the audit logs' checkpoint keys. */
      purpose: z.enum(['access_tokens', 'audit_checkpoints']),
      keyset_digest: digest,
      keys: z
        .array(
          z.object({ kid: text(100), alg: text(32), state: z.enum(['signing', 'verify_only']) }).strict(),
        )
        .max(32),
    })
    .strict(),
  z
    .object({
      kind: z.literal('service_account.changed'),
      action: lifecycle(['created', 'rotated', 'revoked']),
      service_account_id: z.string().uuid(),
      name: text().optional(),
      audiences: z.array(text(32)).max(4).optional(),
      actor,
      request_id: requestId,
    })
    .strict(),
  z
    .object({
      kind: z.literal('api_key.changed'),
      action: lifecycle(['created', 'rotated', 'revoked', 'limits_changed']),
      key_id: z.string().uuid(),
      mode: z.enum(['live', 'test']).optional(),
      role: z.enum(['owner', 'admin', 'member']).optional(),
      /** The last four characters the console shows, never the key. */
      suffix: z.string().max(8).optional(),
      name: text().optional(),
      scopes: z.array(text(64)).max(32).optional(),
      expires_at: isoTime.nullable().optional(),
      /** rotated: the key that replaces this one, and how long this one keeps working. */
      replaced_by: z.string().uuid().optional(),
      grace_period_seconds: z.number().int().min(0).optional(),
      /** created, limits_changed: the key's own limits after the change (null: none). */
      allowed_models: z.array(text(64)).max(32).nullable().optional(),
      spend_limit: z
        .object({ amount_usd: z.number().positive(), period: z.enum(['day', 'week', 'month', 'total']) })
        .strict()
        .nullable()
        .optional(),
      rate_limit: z
        .object({
          requests_per_minute: z.number().int().min(1).optional(),
          tokens_per_minute: z.number().int().min(1).optional(),
        })
        .strict()
        .nullable()
        .optional(),
      actor,
      request_id: requestId,
    })
    .strict(),
  z
    .object({
      kind: z.literal('agent_run.cancelled'),
      run_id: z.string().uuid(),
      /** The credential that started (and owns) the run: key:<id> or sub:<subject>. */
      started_by: text(300),
      actor,
      request_id: requestId,
    })
    .strict(),
  z
    .object({
      kind: z.literal('billing.changed'),
      /** What changed: the plan (and from which), usage credits, the spend cap (null = plan default). */
      plan_id: text(40).optional(),
      previous_plan_id: text(40).optional(),
      usage_credits_enabled: z.boolean().optional(),
      spend_cap_cents: z.number().int().min(0).nullable().optional(),
      actor,
      request_id: requestId,
    })
    .strict(),
  z
    .object({
      kind: z.literal('observability_token.changed'),
      action: lifecycle(['created', 'rotated', 'revoked']),
      token_id: text(100),
      name: text().optional(),
      actor,
      request_id: requestId,
    })
    .strict(),
  z
    .object({
      kind: z.literal('provider_connection.changed'),
      action: lifecycle(['created', 'updated', 'deleted']),
      connection_id: text(100),
      provider: text(64),
      actor,
      request_id: requestId,
    })
    .strict(),
  z
    .object({
      kind: z.literal('inference_receipt.issued'),
      receipt_id: text(100),
      /** Digest of the receipt document as signed. */
      receipt_digest: digest,
      subject: text(200).optional(),
      kid: text(100),
      alg: text(32),
      request_id: requestId,
    })
    .strict(),
  z
    .object({
      kind: z.literal('usage_statement.issued'),
      statement_id: text(100),
      /** sha256 of the DSSE envelope's payload (the statement as signed). */
      statement_digest: digest,
      key_id: text(100),
      mode: z.enum(['live', 'test']),
      /** `<kind>:<start>/<end>` of the statement's period (ISO instants; `total:…/-`). */
      period: text(120),
      requests: z.int().min(0),
      kid: text(100),
      alg: text(32),
      actor,
      request_id: requestId,
    })
    .strict(),
  z
    .object({
      kind: z.literal('attestation.issued'),
      /** sha256 of the DSSE envelope's payload (the in-toto Statement). */
      statement_digest: digest,
      subjects: z.array(z.object({ name: text(300), digest }).strict()).max(64),
      signatures: z.array(z.object({ keyid: text(100), alg: text(32) }).strict()).max(4),
      actor,
      request_id: requestId,
    })
    .strict(),
])

export type AuditEvent = z.infer<typeof AuditEventSchema>

/**
 * One log entry: the event with where and when it was appended. Its canonical JSON (sorted keys,
 * no spaces: RFC 8785 for these values) is the Merkle leaf, so anyone holding the entry recomputes
 * its leaf hash: SHA-256(0x00 || utf8(entry)).
 */
export const AuditEntrySchema = z
  .object({
    v: z.literal(1),
    /** The log's origin (its checkpoint origin line). */
    log: text(300),
    index: z.number().int().min(0),
    /** When the log appended it (ISO 8601, milliseconds, UTC). */
    appended_at: isoTime,
    event: AuditEventSchema,
  })
  .strict()
export type AuditEntry = z.infer<typeof AuditEntrySchema>
