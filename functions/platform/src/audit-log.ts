/**
 * The audit logs over HTTP (docs/audit-log.md): the latest signed checkpoint (JSON, or the signed
 * note itself as text/plain), an on-demand checkpoint, entries by index range, inclusion and
 * consistency proofs, the logs' public keys (public route), and the tenant's crypto-policy
 * decisions with their inclusion proofs. A credential reads its own tenant's log (`log=tenant`,
 * the default) or the platform's log (`log=platform`); never another tenant's.
 */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { type AuditLogNamespace, auditLogOf } from '../../../durable-objects/audit-log/audit-client'
import type { AuditLog, CheckpointView, EntryView } from '../../../durable-objects/audit-log/audit-log.do'
import {
  DEFAULT_LOG_ORIGIN,
  logKeyRing,
  logOrigin,
  logVerifierKeys,
} from '../../../durable-objects/audit-log/log-keys'
import { base64Encode } from '../../../shared/crypto/encoding'
import { AppError, type Refused, reviveAppError } from '../../../shared/http/errors'
import { type FamilyEnv, identityOf, requireAdmin } from '../../../shared/worker/family-app'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import { actorNames } from './actor-names'
import {
  CheckpointSchema,
  ConsistencyProofSchema,
  ConsistencyQuerySchema,
  DecisionListSchema,
  DecisionQuerySchema,
  EntriesQuerySchema,
  EntryListSchema,
  InclusionProofSchema,
  InclusionQuerySchema,
  LogKeysSchema,
  LogQuerySchema,
} from './audit-log.schemas'
import type { PlatformEnv } from './platform.context'
import { errorResponse } from './platform.schemas'

type PlatformContext = Context<FamilyEnv<PlatformEnv>>
const MAX_ENTRIES = 256

/** The answer's value, or its refusal as the AppError the client sees. */
export function unwrap<A extends { ok: boolean }>(answer: A): Extract<A, { ok: true }> {
  if (answer.ok) return answer as Extract<A, { ok: true }>
  throw reviveAppError((answer as unknown as Refused).error)
}

export function auditLogNamespace(env: PlatformEnv): AuditLogNamespace {
  if (!env.AUDIT_LOG) {
    throw new AppError(503, 'audit_log_unavailable', 'The audit log is not configured on this deployment.', {
      internalMessage: 'AUDIT_LOG binding missing',
    })
  }
  return env.AUDIT_LOG
}

/** Which log a request reads: its own tenant's, or the platform's. */
function logFor(
  c: PlatformContext,
  which: 'tenant' | 'platform',
): { tenantId: string | null; stub: DurableObjectStub<AuditLog> } {
  const tenantId = which === 'tenant' ? identityOf(c).tenantId : null
  return { tenantId, stub: auditLogOf(auditLogNamespace(c.env), tenantId) }
}

export async function renderCheckpoint(
  env: PlatformEnv,
  checkpoint: CheckpointView,
  log: 'tenant' | 'platform',
) {
  const ring = await logKeyRing(env.LOG_SIGNING_KEYS)
  return {
    object: 'audit_log_checkpoint' as const,
    log,
    origin: checkpoint.origin,
    tree_size: checkpoint.size,
    root_hash: base64Encode(checkpoint.rootHash),
    timestamp: checkpoint.timestamp,
    note: checkpoint.note,
    verifier_keys: logVerifierKeys(ring, checkpoint.origin),
  }
}

/** One entry's inclusion proof (the first of `result`) with its signed checkpoint, as the API answers it. */
export async function renderInclusionProof(
  env: PlatformEnv,
  result: { checkpoint: CheckpointView; proofs: readonly (EntryView & { proof: Uint8Array[] })[] },
  log: 'tenant' | 'platform',
) {
  const proof = result.proofs[0]!
  return {
    object: 'audit_log_inclusion_proof' as const,
    index: proof.index,
    tree_size: result.checkpoint.size,
    leaf_hash: base64Encode(proof.leafHash),
    entry: proof.entry,
    proof: proof.proof.map(base64Encode),
    checkpoint: await renderCheckpoint(env, result.checkpoint, log),
  }
}

function wantsText(c: PlatformContext): boolean {
  const accept = c.req.header('accept') ?? ''
  return accept.includes('text/plain') && !accept.includes('application/json')
}

const checkpointResponses = {
  200: {
    description: 'The signed checkpoint (JSON; with Accept: text/plain the signed note itself)',
    content: {
      'application/json': { schema: CheckpointSchema },
      'text/plain': { schema: z.string() },
    },
  },
  400: errorResponse('invalid log'),
  503: errorResponse('log_signing_keys_unavailable, audit_log_unavailable'),
}

export function auditLogRoutes(app: OpenAPIHono<FamilyEnv<PlatformEnv>>): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/audit-log/checkpoint',
      operationId: 'getAuditLogCheckpoint',
      tags: ['Audit log'],
      summary: 'The latest signed checkpoint of your log (or the platform log)',
      description:
        'A C2SP tlog-checkpoint signed note: verify the Ed25519 note signature and the ML-DSA-44 cosignature with the keys of GET /platform/v1/audit-log/keys, then use its size and root with the proofs.',
      request: { query: LogQuerySchema },
      responses: checkpointResponses,
    }),
    async (c) => {
      const { log } = c.req.valid('query')
      const { tenantId, stub } = logFor(c, log)
      const { checkpoint } = unwrap(await stub.checkpoint({ tenantId }))
      if (wantsText(c)) return c.text(checkpoint.note, 200)
      return c.json(await renderCheckpoint(c.env, checkpoint, log), 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'post',
      path: '/platform/v1/audit-log/checkpoint',
      operationId: 'createAuditLogCheckpoint',
      tags: ['Audit log'],
      summary: 'Sign a checkpoint of your log now (owners and admins)',
      description: 'Covers every entry appended so far; answers the latest checkpoint when nothing is new.',
      responses: {
        200: { description: 'The checkpoint', content: { 'application/json': { schema: CheckpointSchema } } },
        403: errorResponse('insufficient_role'),
        503: errorResponse('log_signing_keys_unavailable'),
      },
    }),
    async (c) => {
      requireAdmin(c, 'sign an audit log checkpoint')
      const { tenantId, stub } = logFor(c, 'tenant')
      const { checkpoint } = unwrap(await stub.checkpoint({ tenantId, fresh: true }))
      return c.json(await renderCheckpoint(c.env, checkpoint, 'tenant'), 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/audit-log/entries',
      operationId: 'listAuditLogEntries',
      tags: ['Audit log'],
      summary: 'Entries by index range [start, end), at most 256',
      description:
        "Each entry is returned exactly as hashed: leaf_hash = SHA-256(0x00 || utf8(entry)). `event` is the same entry's event, parsed.",
      request: { query: EntriesQuerySchema },
      responses: {
        200: { description: 'Entries', content: { 'application/json': { schema: EntryListSchema } } },
        400: errorResponse('invalid_entry_range'),
      },
    }),
    async (c) => {
      const { log, start, end = start + MAX_ENTRIES } = c.req.valid('query')
      if (end <= start || end - start > MAX_ENTRIES) {
        throw new AppError(
          400,
          'invalid_entry_range',
          `end must be above start and at most ${MAX_ENTRIES} beyond it (got start ${start}, end ${end}).`,
          { param: 'end' },
        )
      }
      const { tenantId, stub } = logFor(c, log)
      const result = unwrap(await stub.entries({ tenantId, start, end }))
      const data = result.entries.map((e) => ({
        index: e.index,
        leaf_hash: base64Encode(e.leafHash),
        entry: e.entry,
        event: (JSON.parse(e.entry) as { event: Record<string, unknown> }).event,
      }))
      const named = new Set(
        data.flatMap(({ event }) =>
          [event.actor, event.subject].filter((v): v is string => typeof v === 'string'),
        ),
      )
      const names =
        tenantId !== null && named.size > 0
          ? await withRequestDatabase(c, 'platform', (db) => actorNames(db, tenantId, named))
          : new Map<string, string>()
      return c.json(
        { object: 'list' as const, log, tree_size: result.size, data, names: Object.fromEntries(names) },
        200,
      )
    },
  )

  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/audit-log/proofs/inclusion',
      operationId: 'getAuditLogInclusionProof',
      tags: ['Audit log'],
      summary: 'Inclusion proof of one entry against a signed checkpoint',
      description:
        "Against the checkpoint of size tree_size, or the latest one (a checkpoint is signed on demand when none covers the entry yet). Verify: leaf_hash = SHA-256(0x00 || entry); RFC 9162 §2.1.3.2 with proof, index, tree_size and the checkpoint's root.",
      request: { query: InclusionQuerySchema },
      responses: {
        200: { description: 'Proof', content: { 'application/json': { schema: InclusionProofSchema } } },
        400: errorResponse('entry_outside_checkpoint'),
        404: errorResponse('audit_entry_not_found, checkpoint_not_found'),
      },
    }),
    async (c) => {
      const { log, index, tree_size } = c.req.valid('query')
      const { tenantId, stub } = logFor(c, log)
      const result = unwrap(
        await stub.inclusionProofs({ tenantId, indexes: [index], treeSize: tree_size ?? null }),
      )
      return c.json(await renderInclusionProof(c.env, result, log), 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/audit-log/proofs/consistency',
      operationId: 'getAuditLogConsistencyProof',
      tags: ['Audit log'],
      summary: 'Consistency proof from an older checkpoint size to a newer checkpoint',
      description:
        "Shows the log only appended between the two: verify with RFC 9162 §2.1.4.2, your older checkpoint's root and the returned checkpoint's root.",
      request: { query: ConsistencyQuerySchema },
      responses: {
        200: { description: 'Proof', content: { 'application/json': { schema: ConsistencyProofSchema } } },
        400: errorResponse('invalid_consistency_range'),
        404: errorResponse('checkpoint_not_found'),
      },
    }),
    async (c) => {
      const { log, first, second } = c.req.valid('query')
      const { tenantId, stub } = logFor(c, log)
      const result = unwrap(await stub.consistency({ tenantId, first, second: second ?? null }))
      return c.json(
        {
          object: 'audit_log_consistency_proof' as const,
          first,
          second: result.checkpoint.size,
          proof: result.proof.map(base64Encode),
          checkpoint: await renderCheckpoint(c.env, result.checkpoint, log),
        },
        200,
      )
    },
  )

  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/audit-log/keys',
      operationId: 'getAuditLogKeys',
      tags: ['Audit log'],
      summary: "The audit logs' checkpoint verification keys (public)",
      description:
        'Every log signs with the same key pair under its own origin as key name, so the vkeys of a log follow from its origin and these keys. Retired keys stay listed (verify_only) for checkpoints signed before a rotation.',
      responses: {
        200: { description: 'Keys', content: { 'application/json': { schema: LogKeysSchema } } },
        503: errorResponse('log_signing_keys_unavailable'),
      },
    }),
    async (c) => {
      const ring = await logKeyRing(c.env.LOG_SIGNING_KEYS)
      const base = c.env.AUDIT_LOG_ORIGIN ?? DEFAULT_LOG_ORIGIN
      const platformOrigin = logOrigin(base, null)
      return c.json(
        {
          object: 'audit_log_keys' as const,
          origin_base: base,
          tenant_origin: `${base}/tenant/{tenant_id}`,
          platform_origin: platformOrigin,
          keys: [...ring.keys],
          platform_verifier_keys: logVerifierKeys(ring, platformOrigin),
        },
        200,
        { 'cache-control': 'public, max-age=300' },
      )
    },
  )

  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/crypto/decisions',
      operationId: 'listCryptoPolicyDecisions',
      tags: ['Crypto policy'],
      summary: 'Crypto-policy decisions from your audit log, newest first, each with its inclusion proof',
      description:
        "Every violation the gateway or the auth worker decided (audit mode: logged and let through; enforce mode: blocked), as recorded in the workspace's audit log before the request was answered, with an inclusion proof against `checkpoint`.",
      request: { query: DecisionQuerySchema },
      responses: {
        200: { description: 'Decisions', content: { 'application/json': { schema: DecisionListSchema } } },
        400: errorResponse('invalid query'),
      },
    }),
    async (c) => {
      const { limit, before } = c.req.valid('query')
      const { tenantId, stub } = logFor(c, 'tenant')
      const { entries } = unwrap(
        await stub.entriesOfKinds({
          tenantId,
          kinds: ['crypto_policy.decision'],
          before: before ?? null,
          limit: limit + 1,
        }),
      )
      const page = entries.slice(0, limit)
      if (page.length === 0)
        return c.json({ object: 'list' as const, checkpoint: null, data: [], has_more: false }, 200)
      const proofs = unwrap(await stub.inclusionProofs({ tenantId, indexes: page.map((e) => e.index) }))
      return c.json(
        {
          object: 'list' as const,
          checkpoint: await renderCheckpoint(c.env, proofs.checkpoint, 'tenant'),
          data: proofs.proofs.map((p) => {
            const { event } = JSON.parse(p.entry) as {
              event: Record<string, unknown> & { outcome: 'logged' | 'blocked' }
            }
            return {
              object: 'crypto_policy_decision' as const,
              index: p.index,
              outcome: event.outcome,
              decision: event,
              leaf_hash: base64Encode(p.leafHash),
              entry: p.entry,
              proof: p.proof.map(base64Encode),
            }
          }),
          has_more: entries.length > limit,
        },
        200,
      )
    },
  )
}
