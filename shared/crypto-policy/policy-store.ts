/**
 * Tenant crypto policies in Postgres (`crypto_policies`, one row per tenant; no row = the Default
 * preset) and recorded violations (`crypto_policy_violations`). Shared by the gateway (enforcement),
 * the auth worker (choice of signing algorithm) and the platform worker (admin API).
 *
 * `preset` in the row is the preset the policy was built from (`null` when it was written field by
 * field from scratch); `customized` says whether it still equals that preset.
 */
import { eq } from 'drizzle-orm'
import { canonicalJson, sha384Hex } from '../crypto/digests'
import { type DatabaseEnv, type Drizzle, openDatabase } from '../db/client'
import { cryptoPolicies, cryptoPolicyViolations } from '../db/schema'
import { AppError } from '../http/errors'
import { errorFields, log } from '../worker/log'
import { failedRules } from './enforcement'
import {
  type AlgorithmCheck,
  type CryptoPolicy,
  CryptoPolicySchema,
  POLICY_PRESETS,
  PRESET_NAMES,
  type PresetName,
} from './policy'

export interface TenantPolicy {
  tenantId: string
  policy: CryptoPolicy
  /** The preset the policy was built from, or null for a policy written from scratch. */
  preset: PresetName | null
  /** False when the policy equals its preset exactly. */
  customized: boolean
  /** `default`: no policy stored, the Default preset applies. */
  source: 'default' | 'stored'
  updatedAt: Date | null
  updatedBy: string | null
}

/**
 * `sha384:<hex>` of the policy's canonical JSON (RFC 8785 JCS for these values): the subject digest
 * the attestation names (SHA-384, as CNSA 2.0 asks of hashes).
 */
export async function policyDigest(policy: CryptoPolicy): Promise<string> {
  return `sha384:${sha384Hex(canonicalJson(policy))}`
}

export function policiesEqual(a: CryptoPolicy, b: CryptoPolicy): boolean {
  return canonicalJson(a) === canonicalJson(b)
}

export function isPresetName(value: string | null | undefined): value is PresetName {
  return typeof value === 'string' && (PRESET_NAMES as readonly string[]).includes(value)
}

export function defaultTenantPolicy(tenantId: string): TenantPolicy {
  return {
    tenantId,
    policy: structuredClone(POLICY_PRESETS.default) as CryptoPolicy,
    preset: 'default',
    customized: false,
    source: 'default',
    updatedAt: null,
    updatedBy: null,
  }
}

export async function loadTenantPolicy(db: Drizzle, tenantId: string): Promise<TenantPolicy> {
  const [row] = await db.select().from(cryptoPolicies).where(eq(cryptoPolicies.tenantId, tenantId)).limit(1)
  if (!row) return defaultTenantPolicy(tenantId)
  const parsed = CryptoPolicySchema.safeParse(row.policy)
  if (!parsed.success) {
    throw new AppError(
      500,
      'crypto_policy_unreadable',
      'The stored crypto policy of this workspace cannot be read; set it again with PUT /platform/v1/crypto/policy.',
      { internalMessage: `crypto_policies row for ${tenantId}: ${parsed.error.message}` },
    )
  }
  const preset = isPresetName(row.preset) ? row.preset : null
  return {
    tenantId,
    policy: parsed.data,
    preset,
    customized: preset === null || !policiesEqual(parsed.data, POLICY_PRESETS[preset]),
    source: 'stored',
    updatedAt: row.updatedAt,
    updatedBy: row.updatedBy,
  }
}

/** Stores an already validated policy (see `validatePolicy`). */
export async function saveTenantPolicy(
  db: Drizzle,
  input: { tenantId: string; policy: CryptoPolicy; preset: PresetName | null; updatedBy: string },
): Promise<TenantPolicy> {
  const updatedAt = new Date()
  const values = {
    tenantId: input.tenantId,
    policy: input.policy,
    preset: input.preset,
    updatedBy: input.updatedBy,
    updatedAt,
  }
  await db
    .insert(cryptoPolicies)
    .values(values)
    .onConflictDoUpdate({
      target: cryptoPolicies.tenantId,
      set: { policy: values.policy, preset: values.preset, updatedBy: values.updatedBy, updatedAt },
    })
  return {
    tenantId: input.tenantId,
    policy: input.policy,
    preset: input.preset,
    customized: input.preset === null || !policiesEqual(input.policy, POLICY_PRESETS[input.preset]),
    source: 'stored',
    updatedAt,
    updatedBy: input.updatedBy,
  }
}

export interface ViolationRecord {
  tenantId: string
  check: AlgorithmCheck
  principal: string
  requestId: string
  method: string
  path: string
}

export async function recordViolations(db: Drizzle, records: readonly ViolationRecord[]): Promise<void> {
  if (records.length === 0) return
  await db.insert(cryptoPolicyViolations).values(
    records.map((r) => ({
      tenantId: r.tenantId,
      algorithm: r.check.algorithm,
      context: r.check.context,
      mode: r.check.mode,
      blocked: r.check.enforced,
      rules: failedRules(r.check),
      principal: r.principal,
      requestId: r.requestId,
      method: r.method,
      path: r.path,
    })),
  )
}

/** Records violations after the response (waitUntil): never on the request path, never failing it. */
export function recordViolationsLater(
  env: DatabaseEnv,
  ctx: { waitUntil(promise: Promise<unknown>): void },
  records: readonly ViolationRecord[],
): void {
  if (records.length === 0) return
  ctx.waitUntil(
    (async () => {
      let database: ReturnType<typeof openDatabase> | undefined
      try {
        database = openDatabase(env, { max: 1 })
        await recordViolations(database.db, records)
      } catch (err) {
        log('warn', 'crypto_violation_record_failed', {
          request_id: records[0]?.requestId,
          ...errorFields(err),
        })
      } finally {
        await database?.close()
      }
    })(),
  )
}
