import { describe, expect, it } from 'vitest'
import { mergeSettled, type SettledRequest, statementRows, usdOf } from './usage-statement-rows'

const T = Date.UTC(2026, 11, 7, 10, 0, 0)
const row = (requestId: string, createdAt: number, extra: Partial<SettledRequest> = {}): SettledRequest => ({
  requestId,
  createdAt,
  endpoint: 'chat.completions',
  model: 'svc-cell',
  unit: 'tokens',
  quantity: 15,
  promptTokens: 10,
  completionTokens: 5,
  creditsUnits: 0,
  status: 200,
  estimated: false,
  ...extra,
})

describe('usage statement rows: each settled request once', () => {
  it('a request flushed between the two reads is in both, and stated once as Postgres has it', () => {
    const object = [row('req_b', T + 1), row('req_c', T + 2)]
    const postgres = [row('req_a', T), row('req_b', T + 1, { creditsUnits: 7 })]
    const merged = mergeSettled(object, postgres)
    expect(merged.map((r) => r.requestId)).toEqual(['req_a', 'req_b', 'req_c'])
    expect(merged[1]!.creditsUnits).toBe(7)
  })

  it('a request id its caller reused is two requests, whichever name Postgres gave the second', () => {
    // The first use is in Postgres; the second, read from the object as `reused`, was flushed before
    // the Postgres read and kept there as `reused~<epoch ms>`.
    const object = [row('reused', T + 50)]
    const postgres = [row('reused', T), row(`reused~${T + 50}`, T + 50)]
    expect(mergeSettled(object, postgres).map((r) => r.requestId)).toEqual(['reused', `reused~${T + 50}`])
    // Not yet flushed: the object's row stands beside the first use.
    expect(mergeSettled(object, [row('reused', T)]).map((r) => [r.requestId, r.createdAt])).toEqual([
      ['reused', T],
      ['reused', T + 50],
    ])
  })

  it('two requests settled in the same millisecond are both stated, in request-id order', () => {
    expect(mergeSettled([row('y', T)], [row('x', T)]).map((r) => r.requestId)).toEqual(['x', 'y'])
  })

  it('totals are the sums of the rows; money is exact to 1e-6 USD', () => {
    const { rows, totals } = statementRows([
      row('agent-turn:run_abc:0123', T, { creditsUnits: 1_250, promptTokens: 100, completionTokens: 20 }),
      row('reasoning-job:5b7c9e2e-0000-4000-8000-000000000000', T + 1, { creditsUnits: 2_000_001 }),
      row('req_plain', T + 2, { status: null, estimated: true }),
    ])
    expect(rows.map((r) => r.resource)).toEqual([
      { type: 'agent_run', id: 'run_abc' },
      { type: 'reasoning_job', id: '5b7c9e2e-0000-4000-8000-000000000000' },
      null,
    ])
    expect(rows.map((r) => r.cost_usd)).toEqual(['0.001250', '2.000001', '0.000000'])
    expect(rows[2]).toMatchObject({
      status: null,
      estimated: true,
      created_at: new Date(T + 2).toISOString(),
    })
    expect(totals).toEqual({ requests: 3, prompt_tokens: 120, completion_tokens: 30, cost_usd: '2.001251' })
    expect(usdOf(123_456_789)).toBe('123.456789')
  })
})
