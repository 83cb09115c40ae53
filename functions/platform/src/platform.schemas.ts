/** zod schemas of the platform API (crypto policy, registry, violations, service accounts). */

import { z } from '@hono/zod-openapi'
import { SERVICE_ACCOUNT_AUDIENCES } from '../../../shared/auth/service-accounts'
import {
  ALGORITHM_TYPES,
  LIFECYCLE_STATUSES,
  POLICY_CONTEXT_NAMES,
  POLICY_MODES,
  PRESET_NAMES,
} from '../../../shared/crypto-policy'
import { ListCursorSchema } from '../../../shared/db/list-cursor'

const algorithmList = z.array(z.string().min(1)).max(64)

/** The spec's policy fields, each optional (PUT with a preset, PATCH). */
const policyFields = {
  enabled: z.boolean().optional(),
  mode: z
    .enum(POLICY_MODES)
    .optional()
    .openapi({ description: 'audit: log violations and let them pass; enforce: block them (403)' }),
  allowedKemAlgorithms: algorithmList.optional(),
  allowedSignatureAlgorithms: algorithmList.optional(),
  allowedSymmetricAlgorithms: algorithmList.optional().openapi({ description: 'Ciphers, hashes and MACs' }),
  forbiddenAlgorithms: algorithmList.optional(),
  minimumSecurityLevel: z.number().int().min(1).max(5).optional(),
  requireNistFinal: z.boolean().optional(),
  allowClassicalFallback: z.boolean().optional(),
  hybridModeRequired: z.boolean().optional(),
}

export const PolicyPutSchema = z
  .object({
    preset: z
      .string()
      .optional()
      .openapi({
        description: `Start from a preset (${PRESET_NAMES.join(', ')}, any case); fields given beside it override it. Without a preset every field is required.`,
      }),
    ...policyFields,
  })
  .strict()
  .openapi('CryptoPolicyPut')

export const PolicyPatchSchema = z.object(policyFields).strict().openapi('CryptoPolicyPatch')

export const CryptoPolicySchemaDoc = z
  .object({
    enabled: z.boolean(),
    mode: z.enum(POLICY_MODES),
    allowedKemAlgorithms: z.array(z.string()),
    allowedSignatureAlgorithms: z.array(z.string()),
    allowedSymmetricAlgorithms: z.array(z.string()),
    forbiddenAlgorithms: z.array(z.string()),
    minimumSecurityLevel: z.number().int(),
    requireNistFinal: z.boolean(),
    allowClassicalFallback: z.boolean(),
    hybridModeRequired: z.boolean(),
  })
  .openapi('CryptoPolicy')

export const PolicyViewSchema = z
  .object({
    object: z.literal('crypto_policy'),
    tenant_id: z.string().uuid(),
    preset: z
      .enum(PRESET_NAMES)
      .nullable()
      .openapi({ description: 'The preset the policy was built from; null when written from scratch' }),
    customized: z.boolean().openapi({ description: 'False when the policy equals its preset exactly' }),
    source: z
      .enum(['default', 'stored'])
      .openapi({ description: 'default: nothing stored, the Default preset applies' }),
    policy: CryptoPolicySchemaDoc,
    token_algorithms: z.object({
      accepted: z
        .array(z.string())
        .openapi({ description: 'JWS algorithms the gateway accepts for this workspace (not blocked)' }),
      compliant: z
        .array(z.string())
        .openapi({ description: 'JWS algorithms the policy allows without a violation' }),
    }),
    updated_at: z.string().nullable(),
    updated_by: z
      .string()
      .nullable()
      .openapi({ description: 'Who made the last change: key:<id>, user:<uuid> or sa:<uuid>' }),
    updated_by_name: z.string().nullable().openapi({
      description:
        "That actor's name in this workspace: the key's or service account's name, the person's email; null when it is not (or no longer) one of this workspace's",
    }),
    attestation: z.object({
      href: z.string(),
      policy_digest: z.string().openapi({
        description:
          'sha384 over the canonical JSON (RFC 8785 JCS) of `policy`: the policy subject of the attestation',
      }),
    }),
  })
  .openapi('CryptoPolicyView')

export const PolicyCheckQuerySchema = z.object({
  algorithm: z.string().min(1).max(64).openapi({
    description:
      'Registry id, standard name, alias or hybrid (e.g. dilithium-3, ML-DSA-65, EdDSA, x25519+kyber-768)',
  }),
  context: z
    .string()
    .max(64)
    .optional()
    .openapi({
      description: `Where the algorithm is used: ${POLICY_CONTEXT_NAMES.join(', ')}. Default request_declared.`,
    }),
})

const RuleSchema = z.object({ rule: z.string(), passed: z.boolean(), detail: z.string() })

export const PolicyCheckSchema = z
  .object({
    object: z.literal('crypto_policy_check'),
    tenant_id: z.string().uuid(),
    algorithm: z.string(),
    requested: z.string(),
    context: z.enum(POLICY_CONTEXT_NAMES as [string, ...string[]]),
    type: z.enum(ALGORITHM_TYPES),
    hybrid: z.boolean(),
    allowed: z.boolean().openapi({ description: 'Compliant with the policy' }),
    decision: z.enum(['allow', 'violation']),
    mode: z.enum(POLICY_MODES),
    enforced: z
      .boolean()
      .openapi({ description: 'Blocked now (a violation under an enabled enforce-mode policy)' }),
    outcome: z
      .enum(['allowed', 'logged', 'blocked'])
      .openapi({ description: 'What happens to a request using it now' }),
    in_enforce_mode: z.enum(['allowed', 'blocked']).openapi({ description: 'What enforce mode would do' }),
    rules: z.array(RuleSchema).openapi({ description: 'Every rule that applied, in order, with why' }),
  })
  .openapi('CryptoPolicyCheck')

export const AlgorithmQuerySchema = z.object({
  status: z
    .string()
    .max(32)
    .optional()
    .openapi({ description: `${LIFECYCLE_STATUSES.join(', ')} (any case)` }),
  type: z
    .string()
    .max(32)
    .optional()
    .openapi({ description: ALGORITHM_TYPES.join(', ') }),
})

export const AlgorithmSchema = z
  .object({
    id: z.string(),
    standardName: z.string(),
    type: z.enum(ALGORITHM_TYPES),
    status: z.enum(LIFECYCLE_STATUSES),
    securityLevel: z.number().int().nullable(),
    family: z.enum(['post_quantum', 'classical', 'symmetric']),
    classical: z.boolean(),
    postQuantum: z.boolean(),
    reference: z.string(),
    oid: z.string().nullable(),
    replacement: z.string().nullable(),
    deprecationDate: z.string().nullable(),
    aliases: z.array(z.string()),
    source: z.enum(['spec', 'product']),
  })
  .openapi('Algorithm')

export const AlgorithmListSchema = z
  .object({ object: z.literal('list'), data: z.array(AlgorithmSchema) })
  .openapi('AlgorithmList')

export const ViolationQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before: ListCursorSchema,
})

export const ViolationSchema = z
  .object({
    id: z.string().uuid(),
    object: z.literal('crypto_policy_violation'),
    algorithm: z.string(),
    context: z.string(),
    mode: z.enum(POLICY_MODES),
    blocked: z.boolean(),
    rules: z.array(z.object({ rule: z.string(), detail: z.string() })),
    principal: z.string(),
    request_id: z.string(),
    method: z.string(),
    path: z.string(),
    created_at: z.string(),
  })
  .openapi('CryptoPolicyViolation')

export const ViolationListSchema = z
  .object({ object: z.literal('list'), data: z.array(ViolationSchema), has_more: z.boolean() })
  .openapi('CryptoPolicyViolationList')

export const ServiceAccountCreateSchema = z
  .object({
    name: z.string().trim().min(1).max(120),
    audiences: z
      .array(z.enum(SERVICE_ACCOUNT_AUDIENCES))
      .min(1)
      .max(2)
      .default(['internal-service'])
      .openapi({
        description:
          'Audiences the account may request; the first is its default. Default ["internal-service"].',
      }),
    scopes: z.array(z.string().min(1).max(64)).max(32).default([]),
  })
  .strict()
  .openapi('ServiceAccountCreate')

export const ServiceAccountSchema = z
  .object({
    id: z.string().uuid(),
    object: z.literal('service_account'),
    tenant_id: z.string().uuid(),
    name: z.string(),
    audiences: z.array(z.enum(SERVICE_ACCOUNT_AUDIENCES)),
    scopes: z.array(z.string()),
    created_by: z.string().nullable(),
    created_at: z.string(),
    rotated_at: z.string().nullable(),
    revoked_at: z.string().nullable(),
  })
  .openapi('ServiceAccount')

export const ServiceAccountWithSecretSchema = ServiceAccountSchema.extend({
  secret: z.string().openapi({
    description: 'The secret (`svc_sa_…`), shown only in this response; store it in a secret manager',
  }),
}).openapi('ServiceAccountWithSecret')

export const ServiceAccountListSchema = z
  .object({ object: z.literal('list'), data: z.array(ServiceAccountSchema) })
  .openapi('ServiceAccountList')

export const ServiceAccountParamsSchema = z.object({ serviceAccountId: z.string().uuid() })

export { errorResponse } from '../../../shared/http/error-body'
