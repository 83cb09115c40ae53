import { describe, expect, it } from 'vitest'
import { cumulative, SeededRandom, sampleIndex, sampleShots } from './shot-sampler'

describe('SeededRandom (xoshiro128**)', () => {
  it('matches the reference output for the state {1, 2, 3, 4}', () => {
    const rng = new SeededRandom([1, 2, 3, 4])
    const out = Array.from({ length: 6 }, () => rng.nextUint32())
    expect(out).toEqual([11520, 0, 5927040, 70819200, 2031721883, 1637235492])
  })
  it('gives the same stream for the same string and a different one for another', async () => {
    const a = await SeededRandom.fromString('job-1')
    const b = await SeededRandom.fromString('job-1')
    const c = await SeededRandom.fromString('job-2')
    const xs = Array.from({ length: 5 }, () => a.nextDouble())
    expect(Array.from({ length: 5 }, () => b.nextDouble())).toEqual(xs)
    expect(Array.from({ length: 5 }, () => c.nextDouble())).not.toEqual(xs)
    for (const x of xs) expect(x >= 0 && x < 1).toBe(true)
  })
})

describe('sampling shots', () => {
  it('finds the bucket of u in the cumulative distribution, edges included', () => {
    const cdf = cumulative([0.25, 0, 0.5, 0.25])
    expect(sampleIndex(cdf, 0)).toBe(0)
    expect(sampleIndex(cdf, 0.2499)).toBe(0)
    expect(sampleIndex(cdf, 0.25)).toBe(2)
    expect(sampleIndex(cdf, 0.7499)).toBe(2)
    expect(sampleIndex(cdf, 0.75)).toBe(3)
    expect(sampleIndex(cdf, 0.999999)).toBe(3)
  })
  it('never draws an outcome of probability zero, and frequencies follow the probabilities', () => {
    const p = [0.1, 0, 0.6, 0.3]
    const counts = sampleShots(p, 20_000, SeededRandom.fromNumber(42))
    expect(counts.has(1)).toBe(false)
    expect([...counts.values()].reduce((a, b) => a + b)).toBe(20_000)
    // Seeded, so the same counts every run; within 4 standard deviations of the expectation.
    for (const [i, pi] of p.entries()) {
      if (pi === 0) continue
      const sd = Math.sqrt(20_000 * pi * (1 - pi))
      expect(Math.abs(counts.get(i)! - 20_000 * pi)).toBeLessThan(4 * sd)
    }
  })
  it('refuses a distribution with no mass', () => {
    expect(() => cumulative([0, 0])).toThrow(/no mass/)
  })
})
