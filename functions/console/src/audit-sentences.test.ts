/**
 * Every kind of audit event reads as a sentence on the audit-log page, with people and keys named as
 * the reader knows them: never the event's JSON (attestation.issued used to show as raw JSON).
 */
import { describe, expect, it } from 'vitest'
import { type AuditEvent, AuditEventSchema } from '../../../shared/audit/audit-events'
import { describeEvent } from './pages/audit-log'

const actor = 'user:6f1c2a5e-0b7d-4c1e-9a3f-2d4b6c8e0a1b'
const request_id = 'req_1'
const digest = 'sha256:ab'
const EVENTS: AuditEvent[] = [
  {
    kind: 'crypto_policy.changed',
    actor,
    request_id,
    preset: 'strict',
    mode: 'enforce',
    enabled: true,
    policy_digest: digest,
    previous_policy_digest: null,
  },
  {
    kind: 'crypto_policy.decision',
    outcome: 'blocked',
    algorithm: 'rsa-2048',
    requested: 'rsa-2048',
    context: 'request_declared',
    mode: 'enforce',
    rules: [],
    principal: actor,
    request_id,
    method: 'GET',
    path: '/svc/memories',
  },
  {
    kind: 'token.issued',
    subject: actor,
    audience: 'platform',
    alg: 'ML-DSA-65',
    kid: 'k1',
    token_id: 't1',
    grant: 'password',
    expires_at: '2026-12-07T10:00:00Z',
    request_id,
  },
  {
    kind: 'refresh_token.family_revoked',
    subject: actor,
    family_id: '6f1c2a5e-0b7d-4c1e-9a3f-2d4b6c8e0a1c',
    reason: 'reuse_detected',
    request_id,
  },
  {
    kind: 'signing_keys.changed',
    purpose: 'access_tokens',
    keyset_digest: digest,
    keys: [{ kid: 'k1', alg: 'ML-DSA-65', state: 'signing' }],
  },
  {
    kind: 'service_account.changed',
    action: 'created',
    service_account_id: '6f1c2a5e-0b7d-4c1e-9a3f-2d4b6c8e0a1d',
    name: 'ci',
    actor,
    request_id,
  },
  {
    kind: 'api_key.changed',
    action: 'revoked',
    key_id: '6f1c2a5e-0b7d-4c1e-9a3f-2d4b6c8e0a1e',
    suffix: 'x7Qa',
    actor,
    request_id,
  },
  {
    kind: 'agent_run.cancelled',
    run_id: '6f1c2a5e-0b7d-4c1e-9a3f-2d4b6c8e0a1f',
    started_by: 'key:1',
    actor,
    request_id,
  },
  { kind: 'billing.changed', plan_id: 'team', previous_plan_id: 'pro', actor, request_id },
  {
    kind: 'observability_token.changed',
    action: 'rotated',
    token_id: 't1',
    name: 'collector',
    actor,
    request_id,
  },
  {
    kind: 'provider_connection.changed',
    action: 'deleted',
    connection_id: 'c1',
    provider: 'ionq',
    actor,
    request_id,
  },
  {
    kind: 'inference_receipt.issued',
    receipt_id: 'r1',
    receipt_digest: digest,
    kid: 'k1',
    alg: 'ML-DSA-65',
    request_id,
  },
  {
    kind: 'usage_statement.issued',
    statement_id: 's1',
    statement_digest: digest,
    key_id: 'k9',
    mode: 'test',
    period: 'month:2026-12-01T00:00:00.000Z/2027-01-01T00:00:00.000Z',
    requests: 3,
    kid: 'k1',
    alg: 'ML-DSA-65',
    actor,
    request_id,
  },
  {
    kind: 'attestation.issued',
    statement_digest: digest,
    subjects: [{ name: 'worker:svc-gateway', digest }],
    signatures: [{ keyid: 'k1', alg: 'ML-DSA-65' }],
    actor,
    request_id,
  },
]

describe('audit entries as sentences', () => {
  it('say every kind in words, naming the actor or subject as the reader knows them', () => {
    const who = (id: string) => (id === actor ? 'you (owner@example.test)' : id)
    const kinds = new Set<string>()
    for (const event of EVENTS) {
      const sentence = describeEvent(event, who)
      kinds.add(event.kind)
      expect(sentence, event.kind).not.toMatch(/[{}[\]"]/)
      expect(sentence, event.kind).not.toContain(actor)
      if ('actor' in event || 'subject' in event)
        expect(sentence, event.kind).toContain('you (owner@example.test)')
    }
    expect(describeEvent(EVENTS[13]!, who)).toBe(
      'Attestation issued to you (owner@example.test): 1 subject, signed with ML-DSA-65',
    )
    expect(describeEvent(EVENTS[12]!, who)).toBe(
      'Usage statement of key:k9 (month, 3 requests) signed (ML-DSA-65) for you (owner@example.test)',
    )
    // Every kind the log records is here.
    expect(kinds.size).toBe(AuditEventSchema.options.length)
  })
})
