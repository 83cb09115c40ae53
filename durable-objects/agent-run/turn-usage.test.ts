import { describe, expect, it } from 'vitest'
import { costOf } from './turn-usage'

describe('what a turn costs', () => {
  it('prices live usage at the catalog prices and never bills test mode', () => {
    const usage = {
      input_tokens: 1000,
      output_tokens: 100,
      reasoning_tokens: 0,
      cached_input_tokens: 400,
      total_tokens: 1100,
    }
    const live = costOf({ model: 'svc-cell', test_mode: false }, usage)
    expect(live).toBeCloseTo(600 * 0.0000001 + 400 * 0.000000025 + 100 * 0.0000004, 12)
    expect(costOf({ model: 'svc-cell', test_mode: true }, usage)).toBe(0)
  })
})
