/**
 * The RateLimiter's hand checks give the schemas' answers: whatever they accept, the schema
 * accepts too and returns unchanged; whatever they decline goes to the schema.
 */
import { describe, expect, it } from 'vitest'
import { LedgerEntrySchema, SettleInputSchema } from '../../shared/metering/metering.schemas'
import { isSettleBatch } from './metering.validator.generated'
import { readLeaseReturns, readLedgerRow, readSettleBatch } from './metering-check'

const settle = {
  tenantId: '5f0c6a52-8a2a-4f55-9d8e-0a4a3f2b8c11',
  mode: 'live',
  planId: 'pro',
  reservationId: '0b6f2d8e-7a51-4c1e-9b8e-3f2a1c0d9e87',
  leaseId: 'a3c1e0f2-1b2c-4d5e-8f90-123456789abc',
  estimatedTokens: 1040,
  requestId: 'req_abc',
  model: 'svc-cell',
  endpoint: 'chat.completions',
  principal: 'key:k1',
  provider: 'mock',
  usage: { promptTokens: 10, completionTokens: 5, cachedTokens: 2, reasoningTokens: 0 },
  estimated: false,
  status: 200,
  latencyMs: 412,
}

const VALUES: unknown[] = [
  null,
  undefined,
  '',
  'x',
  'x'.repeat(65),
  'x'.repeat(201),
  -1,
  0,
  1.5,
  2 ** 60,
  7,
  true,
  {},
  [],
]

function variants(base: Record<string, unknown>): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [{ ...base, extra: 1 }]
  for (const key of Object.keys(base)) {
    const { [key]: _dropped, ...without } = base
    out.push(without)
    for (const value of VALUES) out.push({ ...base, [key]: value })
  }
  return out
}

const settleSamples = [
  settle,
  { ...settle, mode: 'test', usage: null },
  { ...settle, status: 499, latencyMs: 0 },
  { ...settle, status: null, latencyMs: null },
  { ...settle, status: 99 },
  { ...settle, status: 600 },
  (({ leaseId: _l, estimatedTokens: _e, ...rest }) => rest)(settle),
  { ...settle, tenantId: '5F0C6A52-8A2A-4F55-9D8E-0A4A3F2B8C11' },
  { ...settle, tenantId: 'not-a-guid' },
  { ...settle, model: 'gpt-4o' },
  { ...settle, model: 'svc-swarm' },
  { ...settle, model: 'transcription', usage: { ...settle.usage, quantity: 42 } },
  { ...settle, usage: { ...settle.usage, quantity: -1 } },
  ...variants(settle),
  ...variants(settle.usage).map((usage) => ({ ...settle, usage })),
]

describe('settle inputs', () => {
  it('accepted by the generated validator only when the schema accepts them, and returned as the schema returns them', () => {
    let accepted = 0
    for (const sample of settleSamples) {
      const parsed = SettleInputSchema.safeParse(sample)
      if (isSettleBatch([sample])) {
        accepted++
        expect(parsed.success, JSON.stringify(sample)).toBe(true)
        expect(sample).toStrictEqual(parsed.data)
      }
    }
    expect(settleSamples.length).toBeGreaterThan(250)
    expect(accepted).toBeGreaterThan(20)
  })

  it('a batch is checked by hand when every settle passes, else the schema decides and names the problem', () => {
    const batch = [settle, { ...settle, reservationId: 'r2' }]
    expect(readSettleBatch(batch)).toBe(batch)
    expect(() => readSettleBatch([settle, { ...settle, usage: { promptTokens: -1 } }])).toThrow(/usage/)
    // An unknown field is not for the hand check; the schema drops it.
    expect(readSettleBatch([{ ...settle, extra: 1 }])).toEqual([settle])
    expect(() => readSettleBatch('x')).toThrow()
    expect(readLeaseReturns([])).toEqual([])
    expect(() => readLeaseReturns([{ leaseId: '' }])).toThrow()
  })
})

const row = {
  seq: 7,
  reservation_id: settle.reservationId,
  request_id: 'req_abc',
  created_at: 1_763_700_000_000,
  principal: 'key:k1',
  mode: 'live',
  endpoint: 'chat.completions',
  model: 'svc-cell',
  provider: 'mock',
  prompt_tokens: 10,
  completion_tokens: 5,
  cached_tokens: 2,
  reasoning_tokens: 0,
  unit: 'tokens',
  quantity: 15,
  credits_units: 1234,
  estimated: 0,
  flushed: 0,
  status: 200,
  latency_ms: 412,
}

/** What the object did before the hand check: the row mapped, then LedgerEntrySchema. */
function bySchema(r: Record<string, unknown>) {
  return LedgerEntrySchema.safeParse({
    reservationId: r.reservation_id,
    requestId: r.request_id,
    createdAt: r.created_at,
    principal: r.principal,
    mode: r.mode,
    endpoint: r.endpoint,
    model: r.model,
    provider: r.provider,
    promptTokens: r.prompt_tokens,
    completionTokens: r.completion_tokens,
    cachedTokens: r.cached_tokens,
    reasoningTokens: r.reasoning_tokens,
    unit: r.unit,
    quantity: r.quantity,
    creditsUnits: r.credits_units,
    estimated: r.estimated === 1,
    status: r.status ?? null,
    latencyMs: r.latency_ms ?? null,
  })
}

describe('ledger rows', () => {
  it('read by hand exactly as LedgerEntrySchema reads them; refused rows still refused', () => {
    const samples = [
      row,
      { ...row, estimated: 1, mode: 'test' },
      { ...row, model: 'web_search', unit: 'requests', quantity: 1, prompt_tokens: 0, completion_tokens: 0 },
      // Billed from a checkpoint (never ended), or stored before the columns: null.
      { ...row, status: null, latency_ms: null },
      { ...row, status: 502, latency_ms: 60_001 },
      ...variants(row),
    ]
    let checked = 0
    for (const sample of samples) {
      const schema = bySchema(sample)
      let read: ReturnType<typeof readLedgerRow> | null = null
      try {
        read = readLedgerRow(sample)
      } catch {}
      if (typeof sample.seq !== 'number') {
        expect(read).toBeNull()
        continue
      }
      expect(read !== null, JSON.stringify(sample)).toBe(schema.success)
      if (read && schema.success) {
        checked++
        expect(read.entry).toStrictEqual(schema.data)
        expect(read.seq).toBe(sample.seq)
      }
    }
    expect(checked).toBeGreaterThan(20)
  })
})
