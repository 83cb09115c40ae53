/**
 * The tenant's crypto policy: read it (with the attestation reference), set it from a preset or
 * field by field (validated: contradictory settings are refused naming every problem), check one
 * algorithm against it, and list the violations the gateway and the auth worker recorded.
 */

import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import { and, desc, eq } from 'drizzle-orm'
import type { Context } from 'hono'
import {
  acceptedTokenAlgorithms,
  type CryptoPolicy,
  checkAlgorithm,
  getPolicyPreset,
  type PresetName,
  tokenAlgorithmChecks,
  validatePolicy,
} from '../../../shared/crypto-policy'
import {
  loadTenantPolicy,
  policyDigest,
  saveTenantPolicy,
  type TenantPolicy,
} from '../../../shared/crypto-policy/policy-store'
import { olderThanCursor } from '../../../shared/db/list-cursor'
import { cryptoPolicyViolations } from '../../../shared/db/schema'
import { AppError } from '../../../shared/http/errors'
import { type FamilyEnv, identityOf, requireAdmin } from '../../../shared/worker/family-app'
import { actorOf } from '../../../shared/worker/request-context'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import { actorName } from './actor-names'
import { recordAuditEvent } from './database'
import type { PlatformEnv } from './platform.context'
import {
  errorResponse,
  PolicyCheckQuerySchema,
  PolicyCheckSchema,
  PolicyPatchSchema,
  PolicyPutSchema,
  PolicyViewSchema,
  ViolationListSchema,
  ViolationQuerySchema,
} from './platform.schemas'

const POLICY_FIELDS = [
  'enabled',
  'mode',
  'allowedKemAlgorithms',
  'allowedSignatureAlgorithms',
  'allowedSymmetricAlgorithms',
  'forbiddenAlgorithms',
  'minimumSecurityLevel',
  'requireNistFinal',
  'allowClassicalFallback',
  'hybridModeRequired',
] as const satisfies readonly (keyof CryptoPolicy)[]

/** The policy as the API shows it; `updatedByName` is actorName() of `updated_by` in this workspace. */
async function renderPolicy(view: TenantPolicy, updatedByName: string | null) {
  const checks = tokenAlgorithmChecks(view.policy)
  return {
    object: 'crypto_policy' as const,
    tenant_id: view.tenantId,
    preset: view.preset,
    customized: view.customized,
    source: view.source,
    policy: view.policy,
    token_algorithms: {
      accepted: acceptedTokenAlgorithms(view.policy),
      compliant: Object.entries(checks)
        .filter(([, check]) => check.allowed)
        .map(([alg]) => alg),
    },
    updated_at: view.updatedAt?.toISOString() ?? null,
    updated_by: view.updatedBy,
    updated_by_name: updatedByName,
    attestation: {
      href: '/platform/v1/crypto/attestation',
      policy_digest: await policyDigest(view.policy),
    },
  }
}

/** The change on the tenant's audit log, durable before the new policy is acknowledged. */
async function recordPolicyChange(
  c: Context<FamilyEnv<PlatformEnv>>,
  previous: TenantPolicy | null,
  saved: TenantPolicy,
) {
  await recordAuditEvent(c, {
    kind: 'crypto_policy.changed',
    actor: saved.updatedBy ?? actorOf(identityOf(c)),
    request_id: c.get('request').requestId,
    preset: saved.preset,
    mode: saved.policy.mode,
    enabled: saved.policy.enabled,
    policy_digest: await policyDigest(saved.policy),
    previous_policy_digest: previous?.source === 'stored' ? await policyDigest(previous.policy) : null,
  })
}

/** The given fields over a base policy (only the spec's fields; `undefined` leaves a field as it is). */
function overlay(base: CryptoPolicy, fields: Partial<CryptoPolicy>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base }
  for (const field of POLICY_FIELDS) if (fields[field] !== undefined) out[field] = fields[field]
  return out
}

const policyResponses = {
  200: {
    description: 'The policy now in force',
    content: { 'application/json': { schema: PolicyViewSchema } },
  },
  400: errorResponse(
    'invalid_crypto_policy (schema), crypto_policy_contradiction (with policy_problems listing every problem), unknown_policy_preset',
  ),
  403: errorResponse('insufficient_role: only owners and admins may change the policy'),
}

export function cryptoPolicyRoutes(app: OpenAPIHono<FamilyEnv<PlatformEnv>>): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/crypto/policy',
      tags: ['Crypto policy'],
      summary: 'The workspace crypto policy and its attestation reference',
      description:
        'One policy per workspace; a workspace that never set one runs the Default preset. `attestation.policy_digest` is the digest the attestation document names as its policy subject.',
      responses: { 200: policyResponses[200] },
    }),
    async (c) => {
      const identity = identityOf(c)
      const { view, name } = await withRequestDatabase(c, 'platform', async (db) => {
        const view = await loadTenantPolicy(db, identity.tenantId)
        return { view, name: await actorName(db, identity.tenantId, view.updatedBy) }
      })
      return c.json(await renderPolicy(view, name), 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'put',
      path: '/platform/v1/crypto/policy',
      tags: ['Crypto policy'],
      summary:
        'Replace the policy: a preset, a preset with fields overridden, or every field (owners and admins)',
      description:
        'Examples: `{"preset":"strict"}`; `{"preset":"strict","mode":"audit"}` (Strict rules, logged only); a full policy of the ten fields. The result is validated: contradictions (an algorithm allowed and forbidden, allowed below minimumSecurityLevel, a classical algorithm allowed while allowClassicalFallback is false, a non-final one while requireNistFinal is true, hybrid mode without a usable pair, unknown names, an algorithm in the wrong list) are refused with 400 naming each one. The gateway serving the change applies it at once; other gateway isolates within CRYPTO_POLICY_CACHE_TTL_SECONDS.',
      request: { body: { required: true, content: { 'application/json': { schema: PolicyPutSchema } } } },
      responses: policyResponses,
    }),
    async (c) => {
      const identity = requireAdmin(c, 'change the crypto policy')
      const { preset: presetName, ...fields } = c.req.valid('json')
      let preset: PresetName | null = null
      let candidate: Record<string, unknown>
      if (presetName !== undefined) {
        const base = getPolicyPreset(presetName)
        preset = presetName.trim().toLowerCase() as PresetName
        candidate = overlay(base, fields)
      } else {
        const missing = POLICY_FIELDS.filter((f) => fields[f] === undefined)
        if (missing.length > 0) {
          throw new AppError(
            400,
            'incomplete_crypto_policy',
            `Without a preset, PUT needs every policy field; missing: ${missing.join(', ')}. Send {"preset":"default"} (or strict, maximum, government) to start from a preset, or use PATCH to change some fields.`,
          )
        }
        candidate = { ...fields }
      }
      const policy = validatePolicy(candidate)
      const { view, name } = await withRequestDatabase(c, 'platform', async (db) => {
        // A PUT also repairs an unreadable stored policy: it then has no previous digest to record.
        const previous = await loadTenantPolicy(db, identity.tenantId).catch((err: unknown) => {
          if (err instanceof AppError && err.code === 'crypto_policy_unreadable') return null
          throw err
        })
        const saved = await saveTenantPolicy(db, {
          tenantId: identity.tenantId,
          policy,
          preset,
          updatedBy: actorOf(identity),
        })
        await recordPolicyChange(c, previous, saved)
        return { view: saved, name: await actorName(db, identity.tenantId, saved.updatedBy) }
      })
      return c.json(await renderPolicy(view, name), 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'patch',
      path: '/platform/v1/crypto/policy',
      tags: ['Crypto policy'],
      summary: 'Change some policy fields, e.g. {"mode":"enforce"} (owners and admins)',
      description: 'The given fields replace those of the current policy; the result is validated like PUT.',
      request: { body: { required: true, content: { 'application/json': { schema: PolicyPatchSchema } } } },
      responses: policyResponses,
    }),
    async (c) => {
      const identity = requireAdmin(c, 'change the crypto policy')
      const fields = c.req.valid('json')
      const { view, name } = await withRequestDatabase(c, 'platform', async (db) => {
        const current = await loadTenantPolicy(db, identity.tenantId)
        const policy = validatePolicy(overlay(current.policy, fields))
        const saved = await saveTenantPolicy(db, {
          tenantId: identity.tenantId,
          policy,
          preset: current.preset,
          updatedBy: actorOf(identity),
        })
        await recordPolicyChange(c, current, saved)
        return { view: saved, name: await actorName(db, identity.tenantId, saved.updatedBy) }
      })
      return c.json(await renderPolicy(view, name), 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/crypto/policy/check',
      tags: ['Crypto policy'],
      summary:
        'Is this algorithm allowed here? The decision, the rules that decided it, the mode, what enforce would do',
      description:
        'Contexts: token_signature and document_signature (signature algorithms), key_exchange (KEMs and hybrids such as x25519+kyber-768), data_encryption (symmetric ciphers), hashing (hashes), message_authentication (MACs), request_declared (any type: what a client declares in x-svc-crypto-algorithms; the default). Unknown algorithm: 400 unknown_algorithm; unknown context: 400 invalid_policy_context; an algorithm of the wrong type for the context: 400 algorithm_context_mismatch.',
      request: { query: PolicyCheckQuerySchema },
      responses: {
        200: { description: 'The decision', content: { 'application/json': { schema: PolicyCheckSchema } } },
        400: errorResponse(
          'unknown_algorithm, invalid_policy_context, algorithm_context_mismatch, invalid_hybrid_algorithm',
        ),
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const query = c.req.valid('query')
      const { policy } = await withRequestDatabase(c, 'platform', (db) =>
        loadTenantPolicy(db, identity.tenantId),
      )
      const context = query.context ?? 'request_declared'
      const check = checkAlgorithm(policy, query.algorithm, context)
      const asEnforced = checkAlgorithm({ ...policy, mode: 'enforce' }, query.algorithm, context)
      return c.json(
        {
          object: 'crypto_policy_check' as const,
          tenant_id: identity.tenantId,
          ...check,
          outcome: check.enforced
            ? ('blocked' as const)
            : check.allowed
              ? ('allowed' as const)
              : ('logged' as const),
          in_enforce_mode: asEnforced.enforced ? ('blocked' as const) : ('allowed' as const),
        },
        200,
      )
    },
  )

  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/crypto/violations',
      tags: ['Crypto policy'],
      summary: 'Recorded policy violations, newest first (audit-mode passes and enforce-mode blocks)',
      request: { query: ViolationQuerySchema },
      responses: {
        200: { description: 'Violations', content: { 'application/json': { schema: ViolationListSchema } } },
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const query = c.req.valid('query')
      const ours = eq(cryptoPolicyViolations.tenantId, identity.tenantId)
      const listed = {
        table: cryptoPolicyViolations,
        id: cryptoPolicyViolations.id,
        createdAt: cryptoPolicyViolations.createdAt,
        scope: ours,
      }
      const rows = await withRequestDatabase(c, 'platform', async (db) =>
        db
          .select()
          .from(cryptoPolicyViolations)
          .where(and(ours, await olderThanCursor(db, listed, query.before)))
          .orderBy(desc(cryptoPolicyViolations.createdAt), desc(cryptoPolicyViolations.id))
          .limit(query.limit + 1),
      )
      return c.json(
        {
          object: 'list' as const,
          data: rows.slice(0, query.limit).map((r) => ({
            id: r.id,
            object: 'crypto_policy_violation' as const,
            algorithm: r.algorithm,
            context: r.context,
            mode: r.mode,
            blocked: r.blocked,
            rules: r.rules as { rule: string; detail: string }[],
            principal: r.principal,
            request_id: r.requestId,
            method: r.method,
            path: r.path,
            created_at: r.createdAt.toISOString(),
          })),
          has_more: rows.length > query.limit,
        },
        200,
      )
    },
  )
}
