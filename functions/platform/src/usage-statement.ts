/**
 * A key's signed usage statement (issue 29; docs/plans.md, "Usage statements"):
 *
 *   GET /platform/v1/api-keys/{keyId}/usage-statement?period=day|week|month|total&at=<RFC 3339>
 *
 * Every request the key settled in the period (rows from usage_ledger and from the tenant's
 * RateLimiter object, each once: usage-statement-rows.ts) and their totals, as canonical JSON,
 * signed as a DSSE envelope with the deployment's ML-DSA-65 token key (the auth worker's `sign`
 * RPC; the key is in the public JWKS), its digest appended to the tenant's audit log
 * (`usage_statement.issued`), and answered with that entry's inclusion proof against a signed
 * checkpoint. The holder of the key verifies offline with public tools: the signature with the
 * JWKS, sha256(payload) against the entry, the entry's leaf hash and RFC 9162 proof against the
 * checkpoint's root, the checkpoint's signatures with GET /platform/v1/audit-log/keys.
 *
 * Who may read it (decision): whoever may read the key (owners and admins: every key of the
 * workspace; a member: the keys it created) and the key itself, whatever its scopes, so a key
 * handed to a customer or a CI job can fetch its own bill (`current` for its id: such a holder
 * knows only the secret). The key's mode must be the caller's
 * (test usage in test mode, live in live mode, as every usage read); otherwise, as for another
 * workspace's key, 404.
 */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import { appendAuditEvent, auditLogOf } from '../../../durable-objects/audit-log/audit-client'
import { scopesAllow } from '../../../shared/auth/scopes'
import { canonicalJson, sha256Hex } from '../../../shared/crypto/digests'
import { DOCUMENT_SIGNING_ALGORITHM, signDocument } from '../../../shared/crypto/dsse'
import { utf8 } from '../../../shared/crypto/encoding'
import { AppError } from '../../../shared/http/errors'
import { meteringUnavailable } from '../../../shared/metering/metering-client'
import { type SpendPeriod, spendPeriodAt } from '../../../shared/metering/spend-period'
import { type FamilyEnv, identityOf } from '../../../shared/worker/family-app'
import { actorOf, type Identity } from '../../../shared/worker/request-context'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import { apiKeyNotFound, getApiKey } from './api-key-store'
import { auditLogNamespace, renderInclusionProof, unwrap } from './audit-log'
import type { PlatformEnv } from './platform.context'
import { errorResponse } from './platform.schemas'
import {
  CURRENT_KEY,
  defaultStatementPeriod,
  USAGE_STATEMENT_PAYLOAD_TYPE,
  USAGE_STATEMENT_TYPE,
  type UsageStatement,
  UsageStatementParamsSchema,
  UsageStatementQuerySchema,
  UsageStatementResponseSchema,
} from './usage-statement.schemas'
import { settledRequests, statementRows } from './usage-statement-rows'

/** A credential scoped away from the platform API reads its own statement only. */
function readsOwnOnly(identity: Identity): boolean {
  return !scopesAllow(identity.scopes, ['platform:read', 'platform:write'])
}

/** The key asked for: its id, or the calling key for `current`. */
function keyIdOf(identity: Identity, asked: string): string {
  if (asked !== CURRENT_KEY) return asked
  if (identity.principal.kind === 'api_key') return identity.principal.keyId
  throw new AppError(
    400,
    'invalid_request',
    '`current` names the API key making the call, and this credential is not an API key; give the key’s id.',
    { param: 'keyId' },
  )
}

function periodLabel(period: SpendPeriod): string {
  const end = period.end === null ? '-' : new Date(period.end).toISOString()
  return `${period.kind}:${new Date(period.start).toISOString()}/${end}`
}

export function usageStatementRoutes(app: OpenAPIHono<FamilyEnv<PlatformEnv>>): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/api-keys/{keyId}/usage-statement',
      operationId: 'getApiKeyUsageStatement',
      tags: ['API keys'],
      summary: "A key's usage in a period, signed (DSSE, ML-DSA-65) and recorded in the audit log",
      description:
        "Every request the key settled in the period (UTC day, week from Monday, month, or total), each exactly once, with totals, signed with the deployment's ML-DSA-65 key of the JWKS as a DSSE envelope. The payload's sha256 is appended to your workspace's audit log (`usage_statement.issued`) and the answer carries that entry's inclusion proof and the signed checkpoint, so the statement can be verified offline. Owners and admins read any key's statement, a member the keys it created, and a key its own whatever its scopes (`current` names the calling key); a key of the other mode (test/live) than the caller's is 404. Each call issues a new statement (and a new audit entry).",
      request: { params: UsageStatementParamsSchema, query: UsageStatementQuerySchema },
      responses: {
        200: {
          description: 'The signed statement and its audit-log proof',
          content: { 'application/json': { schema: UsageStatementResponseSchema } },
        },
        400: errorResponse('invalid_request: `at` is in the future, or `current` without an API key'),
        404: errorResponse(
          'api_key_not_found in this workspace and mode (or not visible to this credential)',
        ),
        422: errorResponse(
          'usage_statement_too_large: more than 10,000 requests in the period; ask for a shorter one',
        ),
        503: errorResponse('metering_unavailable, signing_unavailable, audit_log_unavailable'),
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const keyId = keyIdOf(identity, c.req.valid('param').keyId)
      const query = c.req.valid('query')
      const now = Date.now()
      const at = query.at === undefined ? now : Date.parse(query.at)
      if (at > now) {
        throw new AppError(400, 'invalid_request', `at must not be in the future (got ${query.at}).`, {
          param: 'at',
        })
      }
      const own = identity.principal.kind === 'api_key' && identity.principal.keyId === keyId
      if (readsOwnOnly(identity) && !own) throw apiKeyNotFound(keyId)
      if (!c.env.RATE_LIMITER) throw meteringUnavailable('RATE_LIMITER binding missing')
      if (!c.env.AUTH) {
        throw new AppError(
          503,
          'signing_unavailable',
          'Statements cannot be signed right now; retry shortly.',
          {
            internalMessage: 'AUTH binding missing',
            headers: { 'retry-after': '30' },
          },
        )
      }
      const limiters = c.env.RATE_LIMITER
      const period = spendPeriodAt(query.period ?? defaultStatementPeriod(), at)
      const { key, requests } = await withRequestDatabase(c, 'platform', async (db) => {
        const key = await getApiKey(db, identity, keyId)
        if (key.mode !== identity.mode) throw apiKeyNotFound(keyId)
        const scope = { tenantId: identity.tenantId, mode: key.mode, keyId }
        return { key, requests: await settledRequests(db, limiters, scope, period, now) }
      })

      const statement: UsageStatement = {
        _type: USAGE_STATEMENT_TYPE,
        statement_id: crypto.randomUUID(),
        generated_at: new Date(now).toISOString(),
        tenant_id: identity.tenantId,
        key_id: key.id,
        mode: key.mode,
        period: {
          kind: period.kind,
          start: new Date(period.start).toISOString(),
          end: period.end === null ? null : new Date(period.end).toISOString(),
        },
        ...statementRows(requests),
      }
      const payload = utf8.encode(canonicalJson(statement))
      const signed = await signDocument(c.env.AUTH, USAGE_STATEMENT_PAYLOAD_TYPE, payload)
      if (!signed.ok) {
        throw new AppError(
          503,
          'signing_unavailable',
          'Statements cannot be signed right now; retry shortly.',
          {
            internalMessage: `${signed.code}: ${signed.message}`,
            headers: { 'retry-after': '30' },
          },
        )
      }
      const entry = await appendAuditEvent(
        c.env.AUDIT_LOG,
        identity.tenantId,
        {
          kind: 'usage_statement.issued',
          statement_id: statement.statement_id,
          statement_digest: `sha256:${sha256Hex(payload)}`,
          key_id: key.id,
          mode: key.mode,
          period: periodLabel(period),
          requests: statement.totals.requests,
          kid: signed.kid,
          alg: DOCUMENT_SIGNING_ALGORITHM,
          actor: actorOf(identity),
          request_id: c.get('request').requestId,
        },
        { idempotencyKey: `usage-statement:${statement.statement_id}` },
      )
      // The checkpoint covering the entry is signed now when none does yet (the log's `covering`).
      const log = auditLogOf(auditLogNamespace(c.env), identity.tenantId)
      const proved = unwrap(
        await log.inclusionProofs({ tenantId: identity.tenantId, indexes: [entry.index] }),
      )
      return c.json(
        {
          object: 'usage_statement' as const,
          statement_id: statement.statement_id,
          envelope: signed.envelope,
          statement,
          jwks_url: `${c.get('request').baseUrl}/.well-known/jwks.json`,
          audit_log: await renderInclusionProof(c.env, proved, 'tenant'),
        },
        200,
        { 'cache-control': 'no-store' },
      )
    },
  )
}
