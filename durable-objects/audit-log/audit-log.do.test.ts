import { env, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import type { AuditEvent } from '../../shared/audit/audit-events'
import { compareCheckpoints, parseCheckpointNote, verifyCheckpointNote } from '../../shared/audit/checkpoint'
import { base64Decode } from '../../shared/crypto/encoding'
import * as independent from '../../test/support/independent-merkle'
import { type AuditLogNamespace, appendAuditEvent, auditLogOf } from './audit-client'
import type { AuditLog } from './audit-log.do'
import { logKeyRing } from './log-keys'
import { verifyConsistency } from './merkle'

const AUDIT_LOG = (env as unknown as { AUDIT_LOG: AuditLogNamespace }).AUDIT_LOG
const LOG_SIGNING_KEYS = (env as unknown as { LOG_SIGNING_KEYS: string }).LOG_SIGNING_KEYS

const decision = (i: number): AuditEvent => ({
  kind: 'crypto_policy.decision',
  outcome: i % 2 === 0 ? 'blocked' : 'logged',
  algorithm: 'ed25519',
  requested: 'EdDSA',
  context: 'token_signature',
  mode: 'enforce',
  rules: [{ rule: 'forbidden_list', detail: 'ed25519 is in forbiddenAlgorithms' }],
  principal: 'key:00000000-0000-4000-8000-000000000001',
  request_id: `req_${i}`,
  method: 'GET',
  path: '/svc/models',
})

async function publicKeys() {
  const ring = await logKeyRing(LOG_SIGNING_KEYS)
  return {
    ed25519: base64Decode(ring.keys[0]!.public_key)!,
    mlDsa44: base64Decode(ring.keys[1]!.public_key)!,
  }
}

async function verifiedProofs(log: DurableObjectStub<AuditLog>, tenantId: string, indexes: number[]) {
  const answer = await log.inclusionProofs({ tenantId, indexes })
  if (!answer.ok) throw new Error(answer.error.message)
  const head = await verifyCheckpointNote(answer.checkpoint.note, await publicKeys())
  expect(head).not.toBeNull()
  const results = []
  for (const p of answer.proofs) {
    const leaf = await independent.leafHashOf(new TextEncoder().encode(p.entry))
    results.push(
      await independent.verifyInclusionRfc(
        BigInt(p.index),
        BigInt(head!.size),
        leaf,
        p.proof,
        head!.rootHash,
      ),
    )
  }
  return { results, answer, head: head! }
}

describe('AuditLog', () => {
  it('32 concurrent appends: 32 entries in one tree, every inclusion proof verifies against one signed checkpoint', async () => {
    const tenantId = crypto.randomUUID()
    const receipts = await Promise.all(
      Array.from({ length: 32 }, (_, i) => appendAuditEvent(AUDIT_LOG, tenantId, decision(i))),
    )
    expect(receipts.map((r) => r.index).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 32 }, (_, i) => i),
    )
    const log = auditLogOf(AUDIT_LOG, tenantId)
    const { results, head, answer } = await verifiedProofs(
      log,
      tenantId,
      receipts.map((r) => r.index),
    )
    expect(head.size).toBe(32)
    expect(head.origin).toBe(`svc.localhost/audit-log/tenant/${tenantId}`)
    expect(results.every(Boolean)).toBe(true)
    // Each receipt's leaf hash is the hash of the entry as served, which names its index.
    for (const p of answer.proofs) {
      const entry = JSON.parse(p.entry)
      expect(entry).toMatchObject({
        v: 1,
        index: p.index,
        log: head.origin,
        event: { kind: 'crypto_policy.decision' },
      })
      expect(p.leafHash).toEqual(receipts.find((r) => r.index === p.index)!.leafHash)
    }
  })

  it('keeps arrival order inside a batch and appends an idempotency key once', async () => {
    const tenantId = crypto.randomUUID()
    const log = auditLogOf(AUDIT_LOG, tenantId)
    const answers = await Promise.all(
      [0, 1, 2, 1].map((i) => log.append({ tenantId, event: decision(i), idempotencyKey: `k${i}` })),
    )
    const indexes = answers.map((a) => (a.ok ? a.receipt.index : -1))
    expect(indexes).toEqual([0, 1, 2, 1])
    const entries = await log.entries({ tenantId, start: 0, end: 10 })
    expect(entries.ok && entries.entries.map((e) => JSON.parse(e.entry).event.request_id)).toEqual([
      'req_0',
      'req_1',
      'req_2',
    ])
  })

  it('refuses an invalid event and a log of another tenant', async () => {
    const tenantId = crypto.randomUUID()
    const log = auditLogOf(AUDIT_LOG, tenantId)
    const bad = await log.append({ tenantId, event: { kind: 'token.issued', subject: 'x' } })
    expect(bad).toMatchObject({ ok: false, error: { status: 400, code: 'invalid_audit_event' } })
    await log.append({ tenantId, event: decision(0) })
    const other = await log.append({ tenantId: crypto.randomUUID(), event: decision(0) })
    expect(other).toMatchObject({ ok: false, error: { code: 'audit_log_mismatch' } })
  })

  it('signs a checkpoint on its alarm, and consecutive checkpoints are provably consistent', async () => {
    const tenantId = crypto.randomUUID()
    const log = auditLogOf(AUDIT_LOG, tenantId)
    for (let i = 0; i < 5; i++) await appendAuditEvent(AUDIT_LOG, tenantId, decision(i))
    expect(await runDurableObjectAlarm(log)).toBe(true)
    const first = await log.checkpoint({ tenantId })
    expect(first.ok && first.checkpoint.size).toBe(5)
    for (let i = 5; i < 13; i++) await appendAuditEvent(AUDIT_LOG, tenantId, decision(i))
    const second = await log.checkpoint({ tenantId, fresh: true })
    if (!first.ok || !second.ok) throw new Error('no checkpoint')
    const keys = await publicKeys()
    const a = await verifyCheckpointNote(first.checkpoint.note, keys)
    const b = await verifyCheckpointNote(second.checkpoint.note, keys)
    expect(b?.size).toBe(13)
    const consistency = await log.consistency({ tenantId, first: 5 })
    if (!consistency.ok) throw new Error(consistency.error.message)
    expect(await independent.verifyConsistencyRfc(5n, 13n, a!.rootHash, b!.rootHash, consistency.proof)).toBe(
      true,
    )
    expect(compareCheckpoints(a!, b!, { proof: consistency.proof, verify: verifyConsistency })).toEqual({
      verdict: 'consistent',
    })
  })

  it('tamper: a flipped byte in a stored entry fails its inclusion proof and the consistency check against an earlier checkpoint', async () => {
    const tenantId = crypto.randomUUID()
    const log = auditLogOf(AUDIT_LOG, tenantId)
    for (let i = 0; i < 9; i++) await appendAuditEvent(AUDIT_LOG, tenantId, decision(i))
    const earlier = await log.checkpoint({ tenantId, fresh: true })
    if (!earlier.ok) throw new Error(earlier.error.message)
    for (let i = 9; i < 12; i++) await appendAuditEvent(AUDIT_LOG, tenantId, decision(i))

    const before = await verifiedProofs(log, tenantId, [4])
    expect(before.results).toEqual([true])

    await runInDurableObject(log, (_, state) => {
      const [row] = state.storage.sql.exec(`SELECT entry FROM entries WHERE idx = 4`).toArray()
      const text = String(row!.entry)
      const flipped = text.replace('req_4', 'req_5')
      expect(flipped).not.toBe(text)
      state.storage.sql.exec(`UPDATE entries SET entry = ? WHERE idx = 4`, flipped)
    })
    const after = await verifiedProofs(log, tenantId, [4])
    expect(after.results).toEqual([false])

    // A monitor rebuilds the tree from the entries it is served and checks it extends the earlier checkpoint.
    const served = await log.entries({ tenantId, start: 0, end: 100 })
    const consistency = await log.consistency({ tenantId, first: 9 })
    if (!served.ok || !consistency.ok) throw new Error('read failed')
    const rebuilt = await rebuildRoot(served.entries.map((e) => e.entry))
    const earlierHead = parseCheckpointNote(earlier.checkpoint.note)!.head
    expect(
      await independent.verifyConsistencyRfc(9n, 12n, earlierHead.rootHash, rebuilt, consistency.proof),
    ).toBe(false)
  })

  it('tamper: a flipped bit in a stored node makes the log refuse to sign and fails the proofs through it', async () => {
    const tenantId = crypto.randomUUID()
    const log = auditLogOf(AUDIT_LOG, tenantId)
    for (let i = 0; i < 8; i++) await appendAuditEvent(AUDIT_LOG, tenantId, decision(i))
    const earlier = await log.checkpoint({ tenantId, fresh: true })
    if (!earlier.ok) throw new Error(earlier.error.message)
    const flip = (level: number, index: number) =>
      runInDurableObject(log, (_, state) => {
        const [row] = state.storage.sql
          .exec(`SELECT hash FROM nodes WHERE level = ? AND idx = ?`, level, index)
          .toArray()
        const hash = new Uint8Array(row!.hash as ArrayBuffer)
        hash[0]! ^= 1
        state.storage.sql.exec(`UPDATE nodes SET hash = ? WHERE level = ? AND idx = ?`, hash, level, index)
      })
    // The hash of leaves 0-1 is a sibling on the path of leaf 2.
    await flip(1, 0)
    expect((await verifiedProofs(log, tenantId, [2])).results).toEqual([false])
    // The hash of leaves 0-7 is part of every later root: the next head no longer extends the signed one.
    await flip(3, 0)
    await appendAuditEvent(AUDIT_LOG, tenantId, decision(8))
    expect(await log.checkpoint({ tenantId, fresh: true })).toMatchObject({
      ok: false,
      error: { status: 500, code: 'audit_log_inconsistent' },
    })
  })

  it('fork: two different trees of the same size under one origin are detected by comparing their checkpoints', async () => {
    const tenantId = crypto.randomUUID()
    // A log that shows two histories: two objects that both claim the tenant's origin.
    const honest = AUDIT_LOG.get(AUDIT_LOG.idFromName(`fork-a:${tenantId}`))
    const forked = AUDIT_LOG.get(AUDIT_LOG.idFromName(`fork-b:${tenantId}`))
    for (let i = 0; i < 6; i++) {
      await honest.append({ tenantId, event: decision(i) })
      await forked.append({ tenantId, event: decision(i === 3 ? 99 : i) })
    }
    const a = await honest.checkpoint({ tenantId, fresh: true })
    const b = await forked.checkpoint({ tenantId, fresh: true })
    if (!a.ok || !b.ok) throw new Error('no checkpoint')
    const keys = await publicKeys()
    const headA = await verifyCheckpointNote(a.checkpoint.note, keys)
    const headB = await verifyCheckpointNote(b.checkpoint.note, keys)
    expect(headA && headB && headA.size === headB.size && headA.origin === headB.origin).toBe(true)
    expect(compareCheckpoints(headA!, headB!)).toEqual({
      verdict: 'fork',
      reason: 'two different trees of size 6',
    })
  })

  it('runs the crypto self-tests on the platform log alarm and keeps the report', async () => {
    const platform = auditLogOf(AUDIT_LOG, null)
    expect(await platform.selfTests()).toBeNull()
    await runDurableObjectAlarm(platform)
    const stored = await platform.selfTests()
    expect(stored?.report.passed).toBe(true)
    // The platform worker runs with webcrypto_modern_algorithms: its ML-DSA is the runtime's.
    const signing = stored?.report.tests.find((t) => t.name === 'ml_dsa_44_sign_verify')
    expect(signing).toMatchObject({ implementation: 'WebCrypto', kind: 'sign_verify', passed: true })
  })
})

/** RFC 9162 MTH over the served entries, recomputed independently. */
async function rebuildRoot(entries: string[]): Promise<Uint8Array> {
  const leaves = await Promise.all(entries.map((e) => independent.leafHashOf(new TextEncoder().encode(e))))
  const mth = async (hashes: Uint8Array[]): Promise<Uint8Array> => {
    if (hashes.length === 1) return hashes[0]!
    let k = 1
    while (k * 2 < hashes.length) k *= 2
    const [l, r] = await Promise.all([mth(hashes.slice(0, k)), mth(hashes.slice(k))])
    const input = new Uint8Array(65)
    input[0] = 1
    input.set(l, 1)
    input.set(r, 33)
    return new Uint8Array(await crypto.subtle.digest('SHA-256', input))
  }
  return mth(leaves)
}
