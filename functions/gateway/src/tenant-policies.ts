/**
 * Tenant crypto policies as the gateway sees them: loaded from Postgres on first need and cached
 * per isolate for CRYPTO_POLICY_CACHE_TTL_SECONDS (default 30). A change made through the admin
 * API invalidates the entry in the gateway isolate that forwarded it (see gateway.app.ts), so the
 * caller sees its own change at once; other isolates pick it up within the TTL. Decisions are
 * memoised per entry, so a hot token costs a map lookup, not a policy evaluation.
 *
 * Only requests that carry an access token or declare algorithms need the policy; API-key requests
 * without declarations never touch it.
 */
import { type AlgorithmCheck, type CryptoPolicy, checkAlgorithm } from '../../../shared/crypto-policy'
import { loadTenantPolicy } from '../../../shared/crypto-policy/policy-store'
import { openDatabase } from '../../../shared/db/client'
import { AppError } from '../../../shared/http/errors'
import { type GatewayEnv, gatewaySettings } from './gateway.context'

export interface CachedPolicy {
  policy: CryptoPolicy
  expiresAt: number
  decisions: Map<string, AlgorithmCheck>
}

const MAX_TENANTS = 10_000
const policies = new Map<string, CachedPolicy>()

export function invalidateTenantPolicy(tenantId: string): void {
  policies.delete(tenantId)
}

export function clearTenantPolicies(): void {
  policies.clear()
}

function ttlMs(env: GatewayEnv): number {
  return gatewaySettings(env).CRYPTO_POLICY_CACHE_TTL_SECONDS * 1000
}

/** Seeds the cache (tests, and the loader below). */
export function rememberTenantPolicy(tenantId: string, policy: CryptoPolicy, ttl: number): CachedPolicy {
  if (policies.size >= MAX_TENANTS) policies.delete(policies.keys().next().value!)
  const entry = { policy, expiresAt: Date.now() + ttl, decisions: new Map<string, AlgorithmCheck>() }
  policies.set(tenantId, entry)
  return entry
}

export async function tenantPolicy(
  env: GatewayEnv,
  ctx: Pick<ExecutionContext, 'waitUntil'>,
  tenantId: string,
): Promise<CachedPolicy> {
  const hit = policies.get(tenantId)
  if (hit && hit.expiresAt > Date.now()) return hit
  const database = openDatabase(env, { max: 1 })
  try {
    const { policy } = await loadTenantPolicy(database.db, tenantId)
    return rememberTenantPolicy(tenantId, policy, ttlMs(env))
  } catch (err) {
    if (err instanceof AppError) throw err
    throw new AppError(
      503,
      'crypto_policy_unavailable',
      "The workspace's crypto policy cannot be read right now, so the request cannot be checked against it; retry shortly.",
      { internalMessage: `policy load failed: ${String(err)}`, headers: { 'retry-after': '1' } },
    )
  } finally {
    ctx.waitUntil(database.close())
  }
}

/** The policy decision for one algorithm in one context, memoised in the cache entry. */
export function decide(entry: CachedPolicy, algorithm: string, context: string): AlgorithmCheck {
  const key = `${algorithm}\n${context}`
  let check = entry.decisions.get(key)
  if (!check) {
    check = checkAlgorithm(entry.policy, algorithm, context)
    if (entry.decisions.size < 256) entry.decisions.set(key, check)
  }
  return check
}
