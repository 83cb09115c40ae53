/**
 * The IonQ v0.3 adapter against the fake provider, over real HTTP: the adapter contract
 * (durable-objects/reasoning-job/quantum/providers/qpu-provider.ts) and the fake's fidelity to the wire format.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { IonqCircuit } from '../../durable-objects/reasoning-job/quantum/ionq-circuit.ts'
import { IonqV03Provider } from '../../durable-objects/reasoning-job/quantum/providers/ionq-v03.ts'
import { QpuProviderError } from '../../durable-objects/reasoning-job/quantum/providers/qpu-provider.ts'
import { type FakeIonq, startFakeIonq } from './ionq-provider.ts'

const KEY = 'ionq-test-key-with-qpu'
const SIM_ONLY = 'ionq-test-key-simulator-only'
let fake: FakeIonq
let ionq: IonqV03Provider

const bell: IonqCircuit = {
  format: 'ionq.circuit.v0',
  gateset: 'qis',
  qubits: 2,
  circuit: [
    { gate: 'h', target: 0 },
    { gate: 'cnot', control: 0, target: 1 },
  ],
}
const meta = (attempt: string) => ({
  svc_job_id: '2b1c0b7e-5d5e-4d4e-9a40-0a5f1b3e9c11',
  svc_attempt: attempt,
})

async function kind(p: Promise<unknown>): Promise<string> {
  try {
    await p
    return 'ok'
  } catch (err) {
    if (err instanceof QpuProviderError) return err.kind
    throw err
  }
}

beforeAll(async () => {
  fake = await startFakeIonq({ keys: { [KEY]: { qpu: true }, [SIM_ONLY]: { qpu: false } } })
  ionq = new IonqV03Provider({ baseUrl: fake.baseUrl, apiKey: KEY })
})
afterAll(() => fake.stop())
beforeEach(() => {
  fake.reset()
  fake.setClock({ mode: 'manual', now: 1_800_000_000_000 })
})

describe('authentication', () => {
  it('accepts exactly "apiKey <key>": no header, Bearer, or an unknown key → 401 with IonQ\'s error body', async () => {
    for (const authorization of [undefined, `Bearer ${KEY}`, 'apiKey nope']) {
      const res = await fetch(`${fake.baseUrl}/jobs`, { headers: authorization ? { authorization } : {} })
      expect(res.status).toBe(401)
      expect(await res.json()).toMatchObject({ error: 'Unauthorized', statusCode: 401 })
    }
    expect(await kind(new IonqV03Provider({ baseUrl: fake.baseUrl, apiKey: 'wrong' }).verify())).toBe(
      'credentials',
    )
    await ionq.verify()
  })
  it('a key without QPU access asking for a QPU gets 403 Forbidden (credentials, permanent)', async () => {
    const simOnly = new IonqV03Provider({ baseUrl: fake.baseUrl, apiKey: SIM_ONLY })
    expect(
      await kind(
        simOnly.submit({ name: 'x', circuit: bell, target: 'qpu.aria-1', shots: 100, metadata: meta('a') }),
      ),
    ).toBe('credentials')
    await simOnly.submit({ name: 'x', circuit: bell, target: 'simulator', shots: 100, metadata: meta('a') })
  })
})

describe('validation: 400 naming what was wrong (rejected, permanent)', () => {
  it.each([
    [
      { ...bell, circuit: [{ gate: 'foo', target: 0 }] },
      'simulator',
      100,
      /input\.circuit\[0\]\.gate: unknown gate "foo"/,
    ],
    [{ ...bell, circuit: [{ gate: 'h', target: 5 }] }, 'simulator', 100, /qubit 5 is out of range/],
    [bell, 'qpu.nowhere', 100, /"target" must be one of/],
    [bell, 'simulator', 0, /"shots" must be an integer from 1 to 10000/],
    [{ ...bell, qubits: 12 }, 'qpu.harmony', 100, /uses 12 qubits; qpu.harmony has 11/],
  ])('%#', async (circuit, target, shots, message) => {
    const err = await ionq
      .submit({ name: 'x', circuit: circuit as IonqCircuit, target, shots, metadata: meta('v') })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(QpuProviderError)
    expect((err as QpuProviderError).kind).toBe('rejected')
    expect((err as QpuProviderError).message).toMatch(message)
    expect(fake.jobs.filter((j) => j.metadata.svc_attempt === 'v')).toHaveLength(0)
  })
})

describe('lifecycle on the injected clock, real simulation', () => {
  it('submitted → ready → running → completed; the simulator returns exact Bell probabilities', async () => {
    const job = await ionq.submit({
      name: 'bell',
      circuit: bell,
      target: 'simulator',
      shots: 100,
      metadata: meta('l1'),
    })
    expect(job.status).toBe('submitted')
    expect((await ionq.get(job.id)).executedOn).toBeNull()
    fake.setClock({ advanceMs: 60 })
    expect((await ionq.get(job.id)).status).toBe('running')
    expect(await kind(ionq.results(job.id))).toBe('rejected')
    fake.setClock({ advanceMs: 100 })
    const done = await ionq.get(job.id)
    expect(done).toMatchObject({
      status: 'completed',
      target: 'simulator',
      executedOn: 'simulator',
      failure: null,
      metadata: meta('l1'),
    })
    expect(Object.fromEntries((await ionq.results(job.id)).probabilities)).toEqual({ 0: 0.5, 3: 0.5 })
  })
  it('a QPU returns shot frequencies (multiples of 1/shots) and a cost; x on qubit 0 reads as state 1', async () => {
    const circuit: IonqCircuit = { qubits: 3, circuit: [{ gate: 'x', target: 0 }] }
    const job = await ionq.submit({
      name: 'x0',
      circuit,
      target: 'qpu.aria-1',
      shots: 200,
      metadata: meta('l2'),
    })
    fake.setClock({ advanceMs: 5_000 })
    const done = await ionq.get(job.id)
    expect(done).toMatchObject({ status: 'completed', target: 'qpu.aria-1', executedOn: 'qpu' })
    expect(done.costUsd).toBeGreaterThan(0)
    expect(Object.fromEntries((await ionq.results(job.id)).probabilities)).toEqual({ 1: 1 })
  })
  it('cancel stops a job that has not finished', async () => {
    const job = await ionq.submit({
      name: 'c',
      circuit: bell,
      target: 'qpu.aria-1',
      shots: 100,
      metadata: meta('l3'),
    })
    expect((await ionq.cancel(job.id)).status).toBe('canceled')
    fake.setClock({ advanceMs: 5_000 })
    expect((await ionq.get(job.id)).status).toBe('canceled')
  })
})

describe('faults', () => {
  it('429 with Retry-After and 5xx are retryable (Retry-After in ms)', async () => {
    fake.script({
      match: { method: 'POST' },
      fault: { kind: 'status', status: 429, retryAfter: '3' },
      times: 1,
    })
    const err = (await ionq
      .submit({ name: 'r', circuit: bell, target: 'simulator', shots: 10, metadata: meta('f1') })
      .catch((e: unknown) => e)) as QpuProviderError
    expect(err.kind).toBe('retryable')
    expect(err.details).toMatchObject({ status: 429, retryAfterMs: 3000 })
    for (const status of [500, 503, 522]) {
      fake.script({ match: { method: 'GET' }, fault: { kind: 'status', status }, times: 1 })
      expect(await kind(ionq.verify())).toBe('retryable')
    }
    expect(fake.jobs.filter((j) => j.metadata.svc_attempt === 'f1')).toHaveLength(0)
  })
  it('a connection dropped after the job was created is an unknown outcome; the job is found by our metadata', async () => {
    fake.script({ match: { method: 'POST' }, fault: { kind: 'drop_after_create' }, times: 1 })
    expect(
      await kind(
        ionq.submit({ name: 'd', circuit: bell, target: 'simulator', shots: 10, metadata: meta('f2') }),
      ),
    ).toBe('outcome_unknown')
    const created = fake.jobs.filter((j) => j.metadata.svc_attempt === 'f2')
    expect(created).toHaveLength(1)
    // Other jobs before and after it; the lookup pages and matches metadata exactly.
    for (let i = 0; i < 120; i++)
      await ionq.submit({
        name: `n${i}`,
        circuit: bell,
        target: 'simulator',
        shots: 1,
        metadata: meta(`other-${i}`),
      })
    const found = await ionq.findByMetadata(meta('f2'), fake.now() - 60_000)
    expect(found?.id).toBe(created[0]!.id)
    expect(await ionq.findByMetadata(meta('never-submitted'), fake.now() - 60_000)).toBeNull()
  })
  it('an answer that decodes past 8 MiB (a gzip bomb) is refused without inflating it', async () => {
    const job = await ionq.submit({
      name: 'b',
      circuit: bell,
      target: 'simulator',
      shots: 10,
      metadata: meta('f6'),
    })
    fake.script({
      match: { method: 'GET' },
      fault: { kind: 'gzip_bomb', inflatedBytes: 4 * 1024 ** 3 },
      times: 1,
    })
    const before = process.memoryUsage().rss
    const started = performance.now()
    const error = await ionq.get(job.id).catch((err: unknown) => err)
    expect(error).toBeInstanceOf(QpuProviderError)
    expect((error as QpuProviderError).kind).toBe('retryable')
    expect((error as QpuProviderError).message).toMatch(/more than 8 MiB/)
    // 4 GiB inflated whole takes seconds and gigabytes; capped, the read stops after 8 MiB.
    expect(performance.now() - started).toBeLessThan(2000)
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024)
    expect((await ionq.get(job.id)).id).toBe(job.id)
  })

  it('a dropped connection on a read is retryable', async () => {
    fake.script({ match: { method: 'GET' }, fault: { kind: 'drop' }, times: 1 })
    expect(await kind(ionq.verify())).toBe('retryable')
  })
  it('failed with failure.code, quota exhausted, and a QPU silently run on the simulator', async () => {
    fake.script({
      match: { metadataValue: 'f3' },
      fault: { kind: 'job_fails', code: 'QuantumComputerError' },
      times: 1,
    })
    fake.script({ match: { metadataValue: 'f4' }, fault: { kind: 'quota_exhausted' }, times: 1 })
    fake.script({ match: { metadataValue: 'f5' }, fault: { kind: 'run_on_simulator' }, times: 1 })
    const a = await ionq.submit({
      name: 'a',
      circuit: bell,
      target: 'qpu.aria-1',
      shots: 10,
      metadata: meta('f3'),
    })
    const b = await ionq.submit({
      name: 'b',
      circuit: bell,
      target: 'qpu.aria-1',
      shots: 10,
      metadata: meta('f4'),
    })
    const c = await ionq.submit({
      name: 'c',
      circuit: bell,
      target: 'qpu.aria-1',
      shots: 10,
      metadata: meta('f5'),
    })
    fake.setClock({ advanceMs: 5_000 })
    expect((await ionq.get(a.id)).failure).toMatchObject({ code: 'QuantumComputerError' })
    expect(await ionq.get(b.id)).toMatchObject({ status: 'failed', failure: { code: 'QuotaExhaustedError' } })
    expect(await ionq.get(c.id)).toMatchObject({
      status: 'completed',
      target: 'simulator',
      executedOn: 'simulator',
    })
  })
  it('readout decay moves probability from 1s to 0s, as on hardware', async () => {
    fake.script({
      match: { metadataValue: 'f6' },
      fault: { kind: 'readout_decay', probability: 0.5 },
      times: 1,
    })
    const job = await ionq.submit({
      name: 'rd',
      circuit: { qubits: 1, circuit: [{ gate: 'x', target: 0 }] },
      target: 'simulator',
      shots: 10,
      metadata: meta('f6'),
    })
    fake.setClock({ advanceMs: 1_000 })
    expect(Object.fromEntries((await ionq.results(job.id)).probabilities)).toEqual({ 0: 0.5, 1: 0.5 })
  })
})
