import { describe, expect, it } from 'vitest'
import {
  comparisonKey,
  HIVE_CONSENSUS_WEIGHT,
  HIVE_QUALITY_WEIGHT,
  hiveScores,
  type JudgeVerdict,
  jaccard,
  judgeComparisons,
  swarmScores,
  wordSet,
} from './scoring'
import { argmax, classicalSelector, softmaxWeight } from './selector'

describe('hive_logprob', () => {
  it('length-normalises: a long confident answer is not punished for its length', () => {
    const [short, long] = hiveScores([
      { text: 'yes it is', logprobs: [-0.1, -0.1, -0.1] },
      { text: 'yes it is', logprobs: Array.from({ length: 300 }, () => -0.1) },
    ])
    expect(short!.quality).toBeCloseTo(Math.exp(-0.1), 6)
    expect(long!.quality).toBeCloseTo(short!.quality!, 6)
    expect(long!.mean_logprob).toBeCloseTo(-0.1, 6)
  })

  it('rewards agreement: the answer the others share gets the consensus term', () => {
    const scores = hiveScores([
      { text: '1024 is larger than 1000', logprobs: [-0.2] },
      { text: '1024 is larger', logprobs: [-0.2] },
      { text: 'bananas are yellow', logprobs: [-0.2] },
    ])
    expect(scores[0]!.consensus).toBeGreaterThan(scores[2]!.consensus)
    expect(scores[0]!.score).toBeCloseTo(
      HIVE_QUALITY_WEIGHT * Math.exp(-0.2) + HIVE_CONSENSUS_WEIGHT * scores[0]!.consensus,
      5,
    )
  })

  it('without logprobs scores by consensus alone and says so (quality null)', () => {
    const [a] = hiveScores([
      { text: 'a b', logprobs: null },
      { text: 'a c', logprobs: [] },
    ])
    expect(a!.quality).toBeNull()
    expect(a!.score).toBe(a!.consensus)
  })

  it('jaccard of word sets', () => {
    expect(jaccard(wordSet('The cat, the HAT'), wordSet('cat hat'))).toBeCloseTo(2 / 3, 6)
    expect(jaccard(wordSet(''), wordSet(''))).toBe(1)
  })
})

describe('swarm_judge', () => {
  it('compares every pair in both orders', () => {
    const comparisons = judgeComparisons(3)
    expect(comparisons).toHaveLength(6)
    expect(new Set(comparisons.map(comparisonKey)).size).toBe(6)
  })

  it('counts a win only when both orders agree; disagreeing orders are ties (position bias)', () => {
    const verdicts = new Map<string, JudgeVerdict>([
      // 0 beats 1 in both orders
      ['0>1', 'A'],
      ['1>0', 'B'],
      // 0 vs 2: each order prefers the answer shown first: position bias, a tie
      ['0>2', 'A'],
      ['2>0', 'A'],
      // 1 vs 2: an explicit tie one way, 2 the other way: inconsistent, a tie
      ['1>2', 'tie'],
      ['2>1', 'A'],
    ])
    const [s0, s1, s2] = swarmScores(3, verdicts)
    expect(s0).toMatchObject({ wins: 1, ties: 1, losses: 0, inconsistent: 1, score: 0.75 })
    expect(s1).toMatchObject({ wins: 0, ties: 1, losses: 1, inconsistent: 1, score: 0.25 })
    expect(s2).toMatchObject({ wins: 0, ties: 2, losses: 0, inconsistent: 2, score: 0.5 })
  })

  it('refuses to score a pair judged in one order only', () => {
    expect(() => swarmScores(2, new Map([['0>1', 'A']]))).toThrow(/both orders/)
  })
})

describe('the classical selector', () => {
  it('takes the argmax, ties to the lowest index', () => {
    expect(argmax([0.2, 0.9, 0.9, 0.1])).toBe(1)
    expect(classicalSelector.select([0.5, 0.5]).index).toBe(0)
  })

  it('confidence is 1/N for equal scores and near 1 for a clear lead', () => {
    expect(softmaxWeight([0.4, 0.4, 0.4, 0.4], 0)).toBeCloseTo(0.25, 6)
    expect(classicalSelector.select([0.95, 0.1, 0.1]).confidence).toBeGreaterThan(0.99)
  })
})
