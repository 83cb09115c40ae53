/**
 * ReasoningJob inside the reasoning worker: real SQLite storage, real alarms driven with
 * runDurableObjectAlarm (due times moved into the past instead of waiting), the simulated model
 * for test keys, a scripted upstream for live keys, the real RateLimiter (metering worker) and
 * the unit Postgres for the job index and the ledger.
 */
import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test'
import { ml_dsa65 } from '@noble/post-quantum/ml-dsa.js'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { sha256Hex } from '../../shared/crypto/digests'
import { preAuthEncoding } from '../../shared/crypto/dsse'
import { auditLogOf } from '../audit-log/audit-client'
import { InferenceReceiptResponseSchema } from './inference-receipt'
import { ReasoningJobSchema } from './job.schemas'
import type { JobReply, ReceiptReply } from './job-calls'
import type { ReasoningJob } from './reasoning-job.do'
import {
  callerOf,
  createJob,
  driveToEnd,
  identityFor,
  indexRow,
  installUpstream,
  jobOf,
  jobRequest,
  ledgerRows,
  mutableEnv,
  reasoningEnv,
  runDueNow,
  uninstallUpstream,
  unwrap,
  upstream,
} from './reasoning-job.do-fixtures'

afterEach(() => {
  uninstallUpstream()
})

/** Waits until the object's alarm has `n` upstream requests in flight (it writes the index first). */
async function waitForRequests(n: number): Promise<void> {
  await vi.waitFor(() => expect(upstream.requests.length).toBeGreaterThanOrEqual(n), {
    timeout: 20_000,
    interval: 20,
  })
}

describe('a test-key job runs end to end on the simulated model', () => {
  it('svc-hive: four candidates scored by hive_logprob, the argmax selected, completed', async () => {
    const identity = await identityFor('test', 'team')
    const handle = await createJob(identity)
    const created = unwrap(handle.reply)
    expect(created).toMatchObject({
      status: 'queued',
      model: 'svc-hive',
      scoring_method: 'hive_logprob',
      requested_real: false,
      real_request_status: 'not_requested',
      outcome_state: 'not_started',
      attempt_count: 0,
    })
    expect(created.quoted_credits).toBeGreaterThan(0)
    expect(ReasoningJobSchema.safeParse(created).success).toBe(true)

    const job = await driveToEnd(handle)
    expect(ReasoningJobSchema.safeParse(job).success).toBe(true)
    expect(job.status).toBe('completed')
    expect(job.outcome_state).toBe('committed')
    // simulation_cloud: the quantum selector on the product's simulator (QAOA, 1000 seeded shots).
    expect(job.selector_backend).toBe('qaoa-xy/statevector')
    expect(job.fallback_reason).toBeNull()
    const candidates = job.candidates ?? []
    expect(candidates).toHaveLength(4)
    const scores = candidates.map((c) => c.score as number)
    const best = scores.indexOf(Math.max(...scores))
    // The classical argmax is recorded beside the quantum answer.
    expect(candidates.map((c) => c.classical_choice)).toEqual(candidates.map((_, i) => i === best))
    // The answer is the most frequent outcome; the confidence is its share of the shots.
    const frequencies = candidates.map((c) => c.quantum_frequency as number)
    expect(frequencies.reduce((a, b) => a + b)).toBeCloseTo(1, 6)
    const chosen = frequencies.indexOf(Math.max(...frequencies))
    expect(job.selected_index).toBe(chosen)
    expect(job.selector_confidence).toBe(frequencies[chosen])
    expect(job.result).toBe(candidates[chosen]!.content)
    for (const c of candidates) {
      expect(c.mean_logprob).toBeLessThanOrEqual(0)
      expect(c.quality).toBeGreaterThan(0)
      expect(c.digest).toMatch(/^sha256:[0-9a-f]{64}$/)
    }
    // Samples, not copies: the seed differs per candidate.
    expect(new Set(candidates.map((c) => c.content)).size).toBeGreaterThan(1)
    expect(job.selector_confidence).toBeGreaterThan(0)
    expect(job.selector_confidence).toBeLessThanOrEqual(1)
    expect(job.usage.model_calls).toBe(4)
    expect(job.usage.total_tokens).toBe(job.usage.prompt_tokens! + job.usage.completion_tokens!)
    expect(job.completed_at).not.toBeNull()

    // The index row follows the object, without content.
    const row = await indexRow(handle.jobId)
    expect(row?.status).toBe('completed')
    expect(row?.record).not.toHaveProperty('prompt')
    expect(row?.record).not.toHaveProperty('result')
  })

  it('svc-swarm: three candidates judged pairwise in both orders (6 calls), completed', async () => {
    const identity = await identityFor('test', 'enterprise')
    const handle = await createJob(identity, jobRequest({ model: 'svc-swarm' }))
    const job = await driveToEnd(handle)
    expect(job.status).toBe('completed')
    expect(job.scoring_method).toBe('swarm_judge')
    expect(job.usage.model_calls).toBe(3 + 6)
    const candidates = job.candidates ?? []
    expect(candidates).toHaveLength(3)
    for (const c of candidates) {
      expect((c.wins as number) + (c.ties as number) + (c.losses as number)).toBe(2)
      expect(c.score).toBeGreaterThanOrEqual(0)
      expect(c.score).toBeLessThanOrEqual(1)
    }
  })

  it('managed_qpu with a test key: the same steps, then classical_fallback (test keys never reach hardware)', async () => {
    const identity = await identityFor('test', 'enterprise')
    const handle = await createJob(identity, jobRequest({ product: 'managed_qpu' }))
    expect(unwrap(handle.reply)).toMatchObject({
      requested_real: true,
      real_request_status: 'not_requested',
    })
    const job = await driveToEnd(handle)
    expect(job).toMatchObject({
      status: 'classical_fallback',
      fallback_reason: 'selector_unreachable',
      selector_backend: 'classical_argmax',
      used_real_qubits: false,
      real_request_status: 'quantum_not_enabled',
    })
    expect(job.result).toBeTypeOf('string')
  })
})

describe('creation', () => {
  it('two creates of one job id (a retry racing the first) make one job and one reservation', async () => {
    const identity = await identityFor('live', 'team')
    installUpstream([{ kind: 'answer' }])
    const jobId = crypto.randomUUID()
    const handle = { jobId, identity, stub: (await createJob(identity)).stub }
    // A fresh id: both calls race into the same new object.
    const { jobStub } = await import('./reasoning-job.do-fixtures')
    const stub = jobStub(identity.tenantId, jobId)
    const call = { jobId, identity, request: jobRequest(), requestId: 'req_race' }
    const [a, b] = (await Promise.all([stub.create(call), stub.create(call)])) as JobReply[]
    expect(unwrap(a!).id).toBe(jobId)
    expect(unwrap(b!).id).toBe(jobId)
    const job = await driveToEnd({ jobId, identity, stub })
    expect(job.error ?? null).toBeNull()
    expect(job.status).toBe('completed')
    void handle
    await vi.waitFor(
      async () => {
        const rows = (await ledgerRows(identity.tenantId)).filter(
          (r) => r.request_id === `reasoning-job:${jobId}`,
        )
        expect(rows).toHaveLength(1)
        expect(rows[0]).toMatchObject({ endpoint: 'reasoning.jobs', model: 'svc-hive', mode: 'live' })
        expect(rows[0]!.prompt_tokens + rows[0]!.completion_tokens).toBe(job.usage.total_tokens)
      },
      { timeout: 10_000, interval: 100 },
    )
  })

  it('answers another tenant with 404 and never shows it the job', async () => {
    const owner = await identityFor('test', 'team')
    const handle = await createJob(owner)
    const stranger = await identityFor('test', 'team')
    const reply = (await handle.stub.get(callerOf(stranger))) as JobReply
    expect(reply.ok).toBe(false)
    if (!reply.ok) expect(reply.error).toMatchObject({ status: 404, code: 'job_not_found' })
    const removed = (await handle.stub.remove(callerOf(stranger))) as JobReply
    expect(removed.ok).toBe(false)
  })
})

describe('DELETE', () => {
  it('cancels a queued job: nothing runs, the reservation is released', async () => {
    const identity = await identityFor('live', 'team')
    installUpstream([{ kind: 'answer' }])
    const jobId = crypto.randomUUID()
    const { jobStub } = await import('./reasoning-job.do-fixtures')
    const stub = jobStub(identity.tenantId, jobId)
    // Create and cancel in one turn of the object: the alarm cannot start the job in between.
    const cancelled = await runInDurableObject(stub, async (instance: ReasoningJob) => {
      unwrap(await instance.create({ jobId, identity, request: jobRequest(), requestId: 'req_cancel' }))
      return instance.remove(callerOf(identity))
    })
    expect(unwrap(cancelled)).toMatchObject({ status: 'cancelled', outcome_state: 'not_started' })
    const job = await driveToEnd({ jobId, identity, stub })
    expect(job.status).toBe('cancelled')
    expect(upstream.requests).toHaveLength(0)
    expect((await ledgerRows(identity.tenantId)).filter((r) => r.request_id.includes(jobId))).toHaveLength(0)
    expect((await indexRow(jobId))?.status).toBe('cancelled')
  })

  it('refuses to cancel a started job (409), then erases its content once finished', async () => {
    const identity = await identityFor('live', 'team')
    installUpstream([{ kind: 'hang' }])
    const handle = await createJob(identity)
    const running = runDurableObjectAlarm(handle.stub)
    await waitForRequests(4)
    expect((await jobOf(handle)).status).toBe('generating_candidates')
    const refused = (await handle.stub.remove(callerOf(identity))) as JobReply
    expect(refused.ok).toBe(false)
    if (!refused.ok) expect(refused.error).toMatchObject({ status: 409, code: 'job_started' })

    upstream.script = [{ kind: 'answer' }]
    await runInDurableObject(handle.stub, () => upstream.release())
    await running
    const done = await driveToEnd(handle)
    expect(done.status).toBe('completed')
    expect(done.prompt).toBeTypeOf('string')

    const erased = unwrap((await handle.stub.remove(callerOf(identity))) as JobReply)
    expect(erased.status).toBe('completed')
    expect(erased).not.toHaveProperty('prompt')
    expect(erased).not.toHaveProperty('result')
    const after = await jobOf(handle)
    expect(after).not.toHaveProperty('prompt')
    expect(after.candidates?.every((c) => !('content' in c) && typeof c.digest === 'string')).toBe(true)
    expect(after.selected_index).toBe(done.selected_index)
    // Erasing again is the same answer.
    expect(unwrap((await handle.stub.remove(callerOf(identity))) as JobReply).status).toBe('completed')
  })

  it("refuses a member deleting another member's job (403); an admin may", async () => {
    const creator = await identityFor('test', 'team', { role: 'member', keyId: 'member-1' })
    const handle = await createJob(creator)
    await driveToEnd(handle)
    const other = {
      ...creator,
      role: 'member' as const,
      principal: { kind: 'api_key' as const, keyId: 'member-2', mode: 'test' as const },
    }
    const refused = (await handle.stub.remove(callerOf(other))) as JobReply
    expect(refused.ok ? null : refused.error.code).toBe('job_management_denied')
    const admin = { ...other, role: 'admin' as const }
    expect(((await handle.stub.remove(callerOf(admin))) as JobReply).ok).toBe(true)
  })
})

describe('retries and failures', () => {
  it('a transient upstream failure is retried with backoff, then the job completes', async () => {
    const identity = await identityFor('live', 'team')
    installUpstream([{ kind: 'status', status: 503 }, { kind: 'answer' }])
    const handle = await createJob(identity)
    await runDurableObjectAlarm(handle.stub)
    const waiting = await jobOf(handle)
    expect(waiting.status).toBe('generating_candidates')
    expect(waiting.attempt_count).toBe(1)
    expect(waiting.max_attempts).toBe(4)
    expect(Date.parse(waiting.next_attempt_at ?? '')).toBeGreaterThan(Date.parse(waiting.updated_at) - 1)
    // The three candidates that did answer are kept: the retry asks only for the missing one.
    const before = upstream.requests.length
    const job = await driveToEnd(handle)
    expect(job.status).toBe('completed')
    expect(upstream.requests.length - before).toBe(1)
    expect(job.attempt_count).toBe(0)
    expect(job.next_attempt_at).toBeNull()
  })

  it('fails with the error after max_attempts, and releases the reservation', async () => {
    const identity = await identityFor('live', 'team')
    installUpstream([{ kind: 'status', status: 503 }])
    const handle = await createJob(identity)
    const job = await driveToEnd(handle)
    expect(job.status).toBe('failed')
    expect(job.attempt_count).toBe(4)
    expect(job.error?.code).toBe('upstream_unavailable')
    expect(job.error?.message).toContain('gave up after 4 attempts')
    expect(job.outcome_state).toBe('committed')
    await runDueNow(handle)
    expect(
      (await ledgerRows(identity.tenantId)).filter((r) => r.request_id.includes(handle.jobId)),
    ).toHaveLength(0)
  })

  it('a permanent refusal (400) fails the job at once', async () => {
    const identity = await identityFor('live', 'team')
    installUpstream([{ kind: 'status', status: 400 }])
    const handle = await createJob(identity)
    const job = await driveToEnd(handle)
    expect(job.status).toBe('failed')
    expect(job.attempt_count).toBe(1)
  })
})

describe('crash recovery', () => {
  it('an object torn down mid-step resumes from its storage: each candidate once, the job completes', async () => {
    const identity = await identityFor('live', 'team')
    // Two candidates answer, two hang; then the object goes away with its in-flight calls.
    installUpstream([{ kind: 'answer' }, { kind: 'answer' }, { kind: 'hang' }])
    const handle = await createJob(identity)
    const running = runDurableObjectAlarm(handle.stub).catch(() => false)
    await waitForRequests(4)
    await abortAllDurableObjects()
    await running
    upstream.forget()
    upstream.script = [{ kind: 'answer' }]
    // A new instance: what the first one stored is all it knows.
    const revived = { ...handle, stub: reasoningEnv.REASONING_JOB.get(handle.stub.id) }
    const stored = await runInDurableObject(
      revived.stub,
      (_i: ReasoningJob, state) =>
        state.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM candidates`).one().n,
    )
    expect(stored).toBe(2)
    const job = await driveToEnd(revived)
    expect(job.status).toBe('completed')
    expect(job.candidates).toHaveLength(4)
    expect(job.usage.model_calls).toBe(4)
    // Two answered before the crash, two were lost with it and asked again: six requests in all.
    expect(upstream.requests).toHaveLength(6)
  })
})

describe('content at rest', () => {
  const kek = (kid: string) => ({
    kid,
    key: btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))
      .replaceAll('+', '-')
      .replaceAll('/', '_')
      .replace(/=+$/, ''),
  })
  const original = reasoningEnv.CONTENT_KEKS

  afterEach(() => {
    mutableEnv.CONTENT_KEKS = original
  })

  /** What the object's SQLite holds, raw. */
  function stored(handle: { stub: DurableObjectStub<ReasoningJob> }) {
    return runInDurableObject(handle.stub, (_i: ReasoningJob, state) => ({
      prompt: state.storage.sql
        .exec<{ value: string }>(`SELECT value FROM content WHERE name = 'prompt'`)
        .toArray()[0]?.value,
      texts: state.storage.sql
        .exec<{ text: string }>(`SELECT text FROM candidates ORDER BY idx`)
        .toArray()
        .map((r) => r.text),
      dataKey: state.storage.sql.exec<{ wrapped: string }>(`SELECT wrapped FROM content_key`).toArray()[0]
        ?.wrapped,
    }))
  }

  it('prompt and candidates are sealed in storage; GET opens them for the owning tenant', async () => {
    const identity = await identityFor('test', 'team')
    const prompt = `A secret question ${crypto.randomUUID()}: is 2^10 larger than 10^3?`
    const handle = await createJob(identity, jobRequest({ prompt }))
    const job = await driveToEnd(handle)
    expect(job.prompt).toBe(prompt)
    const raw = await stored(handle)
    expect(raw.prompt).toMatch(/^v1\.[\w-]+\.[\w-]+$/)
    expect(raw.prompt).not.toContain('secret')
    expect(raw.dataKey).toMatch(/^v1\.test-kek-1\./)
    expect(raw.texts).toHaveLength(4)
    for (const [i, text] of raw.texts.entries()) {
      expect(text).toMatch(/^v1\./)
      expect(text).not.toContain(job.candidates![i]!.content as string)
    }
    // A sealed value is bound to its place: the prompt's ciphertext in a candidate's slot does not open.
    await runInDurableObject(handle.stub, (_i: ReasoningJob, state) => {
      state.storage.sql.exec(`UPDATE candidates SET text = ? WHERE idx = 0`, raw.prompt!)
    })
    const misplaced = (await handle.stub.get(callerOf(identity))) as JobReply
    expect(misplaced.ok).toBe(false)
  })

  it('rotation: a new KEK first re-wraps the data key on use; the old KEK can then go', async () => {
    const identity = await identityFor('test', 'team')
    const [a, b] = [kek('kek-a'), kek('kek-b')]
    mutableEnv.CONTENT_KEKS = JSON.stringify([a])
    const handle = await createJob(identity)
    const done = await driveToEnd(handle)
    const before = await stored(handle)
    expect(before.dataKey).toMatch(/^v1\.kek-a\./)

    mutableEnv.CONTENT_KEKS = JSON.stringify([b, a])
    expect((await jobOf(handle)).prompt).toBe(done.prompt)
    const after = await stored(handle)
    expect(after.dataKey).toMatch(/^v1\.kek-b\./)
    // The content was not re-encrypted: only the data key's wrapping changed.
    expect(after.prompt).toBe(before.prompt)
    expect(after.texts).toEqual(before.texts)

    mutableEnv.CONTENT_KEKS = JSON.stringify([b])
    const revived = { ...handle, stub: reasoningEnv.REASONING_JOB.get(handle.stub.id) }
    expect((await jobOf(revived)).result).toBe(done.result)

    // Without the KEK its data key is wrapped under, nothing opens: 503 naming the secret.
    mutableEnv.CONTENT_KEKS = JSON.stringify([kek('kek-c')])
    await abortAllDurableObjects()
    const fresh = reasoningEnv.REASONING_JOB.get(handle.stub.id)
    const refused = (await fresh.get(callerOf(identity))) as JobReply
    expect(refused.ok ? null : refused.error).toMatchObject({ status: 503, code: 'content_keys_unavailable' })
  })

  it('erasure destroys the data key: a ciphertext kept from before cannot be opened again', async () => {
    const identity = await identityFor('test', 'team')
    const handle = await createJob(identity)
    await driveToEnd(handle)
    const before = await stored(handle)
    unwrap((await handle.stub.remove(callerOf(identity))) as JobReply)
    const after = await stored(handle)
    expect(after.dataKey).toBeUndefined()
    expect(after.prompt).toBeUndefined()
    expect(after.texts.every((t) => t === '')).toBe(true)
    // Someone restores the old ciphertext (a backup, a freed page): without the key it stays closed.
    await runInDurableObject(handle.stub, (_i: ReasoningJob, state) => {
      state.storage.sql.exec(`INSERT INTO content (name, value) VALUES ('prompt', ?)`, before.prompt!)
    })
    const job = await jobOf(handle)
    expect(job).not.toHaveProperty('prompt')
    expect(job).not.toHaveProperty('result')
  })
})

describe('inference receipts', () => {
  it('a completed job names a receipt signed with the token keys and logged with its digest', async () => {
    const identity = await identityFor('test', 'team')
    const handle = await createJob(identity)
    const job = await driveToEnd(handle)
    expect(job.inference_receipt_id).toMatch(/^[0-9a-f-]{36}$/)
    const answer = (await handle.stub.receipt(
      callerOf(identity),
      'https://svc.test/.well-known/jwks.json',
    )) as ReceiptReply
    if (!answer.ok) throw new Error(JSON.stringify(answer.error))
    const { envelope, statement, audit_log } = answer.receipt
    expect(answer.receipt.receipt_id).toBe(job.inference_receipt_id)
    expect(InferenceReceiptResponseSchema.safeParse(answer.receipt).success).toBe(true)
    expect(statement.job).toMatchObject({ id: handle.jobId, tenant_id: identity.tenantId, model: 'svc-hive' })
    expect(statement.candidates.map((c) => c.digest)).toEqual(job.candidates!.map((c) => c.digest))
    expect(statement.selection.selected_index).toBe(job.selected_index)
    expect(statement.usage.total_tokens).toBe(job.usage.total_tokens)
    expect(statement.prompt_digest).toBe(`sha256:${sha256Hex(job.prompt!)}`)

    // The signature, checked against the public JWKS (the gateway's copy of the token keys).
    const payload = Uint8Array.from(atob(envelope.payload), (ch) => ch.charCodeAt(0))
    expect(JSON.parse(new TextDecoder().decode(payload))).toEqual(statement)
    const auth = reasoningEnv.AUTH as unknown as {
      verificationKeys(): Promise<{ keys: { kid: string; alg: string; pub?: string }[] }>
    }
    const jwks = await auth.verificationKeys()
    const key = jwks.keys.find((k) => k.kid === envelope.signatures[0]!.keyid) as { pub: string; alg: string }
    expect(key.alg).toBe('ML-DSA-65')
    const sig = Uint8Array.from(atob(envelope.signatures[0]!.sig), (ch) => ch.charCodeAt(0))
    const pub = Uint8Array.from(atob(key.pub.replaceAll('-', '+').replaceAll('_', '/')), (ch) =>
      ch.charCodeAt(0),
    )
    expect(ml_dsa65.verify(sig, preAuthEncoding(envelope.payloadType, payload), pub)).toBe(true)
    const tampered = new Uint8Array(payload)
    tampered[10] = tampered[10]! ^ 1
    expect(ml_dsa65.verify(sig, preAuthEncoding(envelope.payloadType, tampered), pub)).toBe(false)

    // The audit log holds the event, with the digest of exactly these payload bytes.
    const log = auditLogOf(reasoningEnv.AUDIT_LOG!, identity.tenantId)
    const read = await log.entries({
      tenantId: identity.tenantId,
      start: audit_log.index,
      end: audit_log.index + 1,
    })
    if (!read.ok) throw new Error(read.error.message)
    const entry = JSON.parse(read.entries[0]!.entry) as { event: Record<string, unknown> }
    expect(entry.event).toMatchObject({
      kind: 'inference_receipt.issued',
      receipt_id: job.inference_receipt_id,
      receipt_digest: `sha256:${sha256Hex(payload)}`,
      kid: envelope.signatures[0]!.keyid,
      alg: 'ML-DSA-65',
    })
  })

  it('a crash between signing and logging: the retry logs the same signed receipt once', async () => {
    const identity = await identityFor('test', 'team')
    const handle = await createJob(identity)
    // Run to the end of the steps, but sign only: the audit append is cut off (no AUDIT_LOG).
    const auditLog = mutableEnv.AUDIT_LOG
    mutableEnv.AUDIT_LOG = undefined
    try {
      for (let i = 0; i < 10; i++) await runDueNow(handle)
    } finally {
      mutableEnv.AUDIT_LOG = auditLog
    }
    const pending = await runInDurableObject(handle.stub, (_i: ReasoningJob, state) =>
      state.storage.sql
        .exec<{ envelope_json: string | null; log_json: string | null }>(`SELECT * FROM receipt`)
        .one(),
    )
    expect(pending.envelope_json).not.toBeNull()
    expect(pending.log_json).toBeNull()
    expect((await jobOf(handle)).inference_receipt_id).toBeNull()

    const job = await driveToEnd(handle)
    const answer = (await handle.stub.receipt(
      callerOf(identity),
      'https://svc.test/.well-known/jwks.json',
    )) as ReceiptReply
    if (!answer.ok) throw new Error(JSON.stringify(answer.error))
    expect(JSON.stringify(answer.receipt.envelope)).toBe(pending.envelope_json)
    const log = auditLogOf(reasoningEnv.AUDIT_LOG!, identity.tenantId)
    const kinds = await log.entriesOfKinds({
      tenantId: identity.tenantId,
      kinds: ['inference_receipt.issued'],
      limit: 100,
    })
    if (!kinds.ok) throw new Error(kinds.error.message)
    const ours = kinds.entries.filter((e) => e.entry.includes(job.inference_receipt_id!))
    expect(ours).toHaveLength(1)
  })

  it('a job erased before its receipt was written still gets one, without the prompt digest', async () => {
    const identity = await identityFor('test', 'team')
    const handle = await createJob(identity)
    const auth = mutableEnv.AUTH
    mutableEnv.AUTH = undefined
    try {
      for (let i = 0; i < 10 && (await jobOf(handle)).status !== 'completed'; i++) await runDueNow(handle)
    } finally {
      mutableEnv.AUTH = auth
    }
    unwrap((await handle.stub.remove(callerOf(identity))) as JobReply)
    // As if the erasure had come before the receipt step first ran: no statement written yet.
    await runInDurableObject(handle.stub, (_i: ReasoningJob, state) => {
      state.storage.sql.exec(`DELETE FROM receipt`)
    })
    const job = await driveToEnd(handle)
    expect(job.inference_receipt_id).not.toBeNull()
    const answer = (await handle.stub.receipt(callerOf(identity), 'x')) as ReceiptReply
    if (!answer.ok) throw new Error(JSON.stringify(answer.error))
    expect(answer.receipt.statement.prompt_digest).toBeNull()
    expect(answer.receipt.statement.candidates.map((c) => c.digest)).toEqual(
      job.candidates!.map((c) => c.digest),
    )
  })

  it('no receipt before the job completes (404 receipt_not_issued), none for another tenant', async () => {
    const identity = await identityFor('test', 'team')
    const handle = await createJob(identity)
    const early = (await handle.stub.receipt(callerOf(identity), 'x')) as ReceiptReply
    expect(early.ok ? null : early.error.code).toBe('receipt_not_issued')
    await driveToEnd(handle)
    const stranger = await identityFor('test', 'team')
    const other = (await handle.stub.receipt(callerOf(stranger), 'x')) as ReceiptReply
    expect(other.ok ? null : other.error.code).toBe('job_not_found')
  })
})
