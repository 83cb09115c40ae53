/**
 * What the trust documents (CBOM, compliance, attestation) describe, gathered once per request from
 * what is actually configured and running: the tenant's effective policy, the token keys (the auth
 * worker's public JWKS) with their state and first-recorded date from the platform's audit log,
 * the audit logs' own keys, the libraries the build pinned, and the last self-test report of this
 * deployment (the platform log runs the self-tests on its alarm; nothing runs on the request path).
 */
import type { Context } from 'hono'
import { appendAuditEvent, auditLogOf } from '../../../durable-objects/audit-log/audit-client'
import type { AuditLog } from '../../../durable-objects/audit-log/audit-log.do'
import { type LogKeyRing, logKeyRing } from '../../../durable-objects/audit-log/log-keys'
import type { Jwks } from '../../../shared/crypto'
import { PUBLIC_KEY_BYTES } from '../../../shared/crypto/jws-algorithms'
import type { SelfTestReport } from '../../../shared/crypto/self-test'
import { loadTenantPolicy, policyDigest, type TenantPolicy } from '../../../shared/crypto-policy/policy-store'
import { AppError } from '../../../shared/http/errors'
import { type FamilyEnv, identityOf } from '../../../shared/worker/family-app'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import { auditLogNamespace, unwrap } from './audit-log'
import type { CbomKey } from './cbom'
import buildFactsJson from './crypto-libraries.generated.json'
import type { BuildFacts } from './crypto-library-list'
import type { PlatformEnv } from './platform.context'

export const BUILD_FACTS = buildFactsJson as BuildFacts

export interface Posture {
  tenantId: string
  view: TenantPolicy
  policyDigest: string
  jwks: Jwks
  logKeys: LogKeyRing
  keys: CbomKey[]
  selfTests: { report: SelfTestReport; ranAt: number } | null
  platformLog: DurableObjectStub<AuditLog>
}

/** Key sets of the log keys already on the platform log (per isolate; the log dedups by digest too). */
const recordedLogKeySets = new Set<string>()

/** A rotation of the log keys (LOG_SIGNING_KEYS) on the platform log, once per key set. */
export async function recordLogKeys(env: PlatformEnv, ring: LogKeyRing): Promise<void> {
  if (recordedLogKeySets.has(ring.digest)) return
  await appendAuditEvent(
    env.AUDIT_LOG,
    null,
    {
      kind: 'signing_keys.changed',
      purpose: 'audit_checkpoints',
      keyset_digest: ring.digest,
      keys: ring.keys.map((k) => ({ kid: k.kid, alg: k.alg, state: k.state })),
    },
    { idempotencyKey: `signing-keys:audit_checkpoints:${ring.digest}` },
  )
  recordedLogKeySets.add(ring.digest)
}

interface KeySetEvent {
  appended_at: string
  event: {
    purpose: CbomKey['purpose']
    keys: { kid: string; alg: string; state: 'signing' | 'verify_only' }[]
  }
}

export async function loadPosture(c: Context<FamilyEnv<PlatformEnv>>): Promise<Posture> {
  const { tenantId } = identityOf(c)
  const namespace = auditLogNamespace(c.env)
  if (!c.env.AUTH) {
    throw new AppError(
      503,
      'signing_service_unavailable',
      'The auth service is not bound to the platform worker.',
    )
  }
  const platformLog = auditLogOf(namespace, null)
  const [view, jwks, logKeys, selfTests] = await Promise.all([
    withRequestDatabase(c, 'platform', (db) => loadTenantPolicy(db, tenantId)),
    c.env.AUTH.verificationKeys(),
    logKeyRing(c.env.LOG_SIGNING_KEYS),
    platformLog.selfTests(),
  ])
  await recordLogKeys(c.env, logKeys)
  const { entries } = unwrap(
    await platformLog.entriesOfKinds({ tenantId: null, kinds: ['signing_keys.changed'], limit: 100 }),
  )
  // Newest first: the newest record of a key says its state; the oldest says when it appeared.
  const state = new Map<string, 'signing' | 'verify_only'>()
  const firstSeen = new Map<string, string>()
  for (const { entry } of entries) {
    const { appended_at, event } = JSON.parse(entry) as KeySetEvent
    for (const key of event.keys) {
      const id = `${event.purpose}/${key.kid}`
      if (!state.has(id)) state.set(id, key.state)
      firstSeen.set(id, appended_at)
    }
  }
  const keys: CbomKey[] = [
    ...jwks.keys.map((jwk) => {
      const id = `access_tokens/${jwk.kid}`
      return {
        kid: jwk.kid ?? '',
        alg: jwk.alg,
        purpose: 'access_tokens' as const,
        state: state.get(id) === 'verify_only' ? ('deactivated' as const) : ('active' as const),
        activationDate: firstSeen.get(id) ?? null,
        publicKeyBytes: PUBLIC_KEY_BYTES[jwk.alg],
      }
    }),
    ...logKeys.keys.map((k) => ({
      kid: k.kid,
      alg: k.alg,
      purpose: 'audit_checkpoints' as const,
      state: k.state === 'signing' ? ('active' as const) : ('deactivated' as const),
      activationDate: firstSeen.get(`audit_checkpoints/${k.kid}`) ?? null,
      publicKeyBytes: PUBLIC_KEY_BYTES[k.alg],
    })),
  ]
  return {
    tenantId,
    view,
    policyDigest: await policyDigest(view.policy),
    jwks,
    logKeys,
    keys,
    selfTests,
    platformLog,
  }
}
