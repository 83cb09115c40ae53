/** zod schemas of the audit-log API (checkpoints, entries, proofs, keys, decisions). */
import { z } from '@hono/zod-openapi'

const base64Hash = z.string().openapi({ description: 'SHA-256 hash, standard base64 (44 characters)' })

export const LogQuerySchema = z.object({
  log: z
    .enum(['tenant', 'platform'])
    .default('tenant')
    .openapi({ description: "tenant: your workspace's log (default); platform: the platform's own log" }),
})

export const CheckpointSchema = z
  .object({
    object: z.literal('audit_log_checkpoint'),
    log: z.enum(['tenant', 'platform']),
    origin: z
      .string()
      .openapi({ description: "The origin line: the log identity and the signatures' key name" }),
    tree_size: z.number().int(),
    root_hash: base64Hash,
    timestamp: z.number().int().openapi({ description: 'POSIX seconds of the ML-DSA-44 cosignature' }),
    note: z.string().openapi({
      description:
        'The checkpoint as a C2SP signed note: origin, size, root, blank line, then an Ed25519 note signature (type 0x01) and an ML-DSA-44 cosignature (type 0x06), both under the origin as key name',
    }),
    verifier_keys: z
      .array(z.string())
      .openapi({ description: 'C2SP vkeys of this log (<name>+<hex key id>+base64(type || public key))' }),
  })
  .openapi('AuditLogCheckpoint')

export const EntriesQuerySchema = LogQuerySchema.extend({
  start: z.coerce.number().int().min(0).default(0),
  end: z.coerce
    .number()
    .int()
    .min(1)
    .optional()
    .openapi({ description: 'Exclusive; at most start + 256 (the default)' }),
})

export const EntrySchema = z
  .object({
    index: z.number().int(),
    leaf_hash: base64Hash.openapi({ description: 'SHA-256(0x00 || utf8(entry))' }),
    entry: z.string().openapi({ description: 'The entry exactly as hashed (canonical JSON)' }),
    event: z.record(z.string(), z.unknown()).openapi({ description: 'entry.event, parsed for convenience' }),
  })
  .openapi('AuditLogEntry')

export const EntryListSchema = z
  .object({
    object: z.literal('list'),
    log: z.enum(['tenant', 'platform']),
    tree_size: z.number().int().openapi({ description: 'Entries in the log now (signed or not)' }),
    data: z.array(EntrySchema),
    names: z.record(z.string(), z.string()).openapi({
      description:
        "Names of the keys, people and service accounts these entries' `actor` and `subject` fields name (`key:<id>`, `user:<uuid>`, `sa:<uuid>`), resolved in the caller's workspace: a key's or account's name, a member's email. Not part of what is hashed; empty for the platform log, absent names are unknown here",
    }),
  })
  .openapi('AuditLogEntryList')

export const InclusionQuerySchema = LogQuerySchema.extend({
  index: z.coerce.number().int().min(0),
  tree_size: z.coerce.number().int().min(1).optional().openapi({
    description: 'Size of a checkpoint you hold; default the latest (signed now if none covers the entry)',
  }),
})

export const InclusionProofSchema = z
  .object({
    object: z.literal('audit_log_inclusion_proof'),
    index: z.number().int(),
    tree_size: z.number().int(),
    leaf_hash: base64Hash,
    entry: z.string(),
    proof: z.array(base64Hash).openapi({ description: 'RFC 9162 inclusion path, from the leaf level up' }),
    checkpoint: CheckpointSchema,
  })
  .openapi('AuditLogInclusionProof')

export const ConsistencyQuerySchema = LogQuerySchema.extend({
  first: z.coerce.number().int().min(1).openapi({ description: 'Size of the older checkpoint you hold' }),
  second: z.coerce
    .number()
    .int()
    .min(1)
    .optional()
    .openapi({ description: 'Size of a newer checkpoint; default the latest' }),
})

export const ConsistencyProofSchema = z
  .object({
    object: z.literal('audit_log_consistency_proof'),
    first: z.number().int(),
    second: z.number().int(),
    proof: z.array(base64Hash).openapi({ description: 'RFC 9162 consistency proof' }),
    checkpoint: CheckpointSchema.openapi({ description: 'The checkpoint of size `second`' }),
  })
  .openapi('AuditLogConsistencyProof')

export const LogKeysSchema = z
  .object({
    object: z.literal('audit_log_keys'),
    origin_base: z.string(),
    tenant_origin: z.string().openapi({ description: 'Origin of a tenant log: replace {tenant_id}' }),
    platform_origin: z.string(),
    keys: z.array(
      z.object({
        kid: z.string(),
        alg: z.enum(['EdDSA', 'ML-DSA-44']),
        signature_type: z.number().int(),
        public_key: z.string().openapi({ description: 'Raw public key, standard base64' }),
        state: z.enum(['signing', 'verify_only']),
      }),
    ),
    platform_verifier_keys: z.array(z.string()),
  })
  .openapi('AuditLogKeys')

export const DecisionQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(50).default(20),
  before: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .openapi({ description: "Log index cursor: entries before it (the last page's smallest index)" }),
})

export const DecisionListSchema = z
  .object({
    object: z.literal('list'),
    checkpoint: CheckpointSchema.nullable(),
    data: z.array(
      z.object({
        object: z.literal('crypto_policy_decision'),
        index: z.number().int(),
        outcome: z.enum(['logged', 'blocked']),
        decision: z.record(z.string(), z.unknown()),
        leaf_hash: base64Hash,
        entry: z.string(),
        proof: z.array(base64Hash).openapi({ description: 'Inclusion proof against `checkpoint`' }),
      }),
    ),
    has_more: z.boolean(),
  })
  .openapi('CryptoPolicyDecisionList')
