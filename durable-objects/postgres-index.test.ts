import { describe, expect, it } from 'vitest'
import { INDEX_RETRY_MAX_MS, INDEX_RETRY_MIN_MS, indexRetryDelayMs } from './postgres-index'

describe('index write retries', () => {
  it('wait 5 s at first, then about as long as the index has lagged (doubling), at most 5 minutes', () => {
    const changedAt = 1_000_000
    expect(indexRetryDelayMs(changedAt, changedAt)).toBe(INDEX_RETRY_MIN_MS)
    expect(indexRetryDelayMs(changedAt + 5_000, changedAt)).toBe(5_000)
    expect(indexRetryDelayMs(changedAt + 10_000, changedAt)).toBe(10_000)
    expect(indexRetryDelayMs(changedAt + 3_600_000, changedAt)).toBe(INDEX_RETRY_MAX_MS)
    // Retrying at each due time: the number of wakes over an hour of outage stays small.
    let now = changedAt
    let wakes = 0
    while (now < changedAt + 3_600_000) {
      now += indexRetryDelayMs(now, changedAt)
      wakes++
    }
    expect(wakes).toBeLessThan(20)
  })
})
