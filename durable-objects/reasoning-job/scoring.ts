/**
 * How a job's candidates are scored: pure functions, no I/O (docs/reasoning-jobs.md, "Scoring").
 *
 * hive_logprob (svc-hive): each candidate's own confidence plus agreement with the others.
 *   quality   = exp(mean token logprob): the geometric mean of the token probabilities, so a long
 *               answer is not punished for having more tokens (length-normalised);
 *   consensus = mean Jaccard similarity of its word set with every other candidate's
 *               (self-consistency: an answer the samples agree on is more likely right);
 *   score     = 0.7 quality + 0.3 consensus. Without logprobs (an upstream that sends none) the
 *               score is the consensus alone, and the evidence says so (`quality: null`).
 *
 * swarm_judge (svc-swarm): an LLM judge compares every pair twice, once in each order. A verdict
 *   counts only when both orders agree; disagreeing orders (position bias) and "tie" count as a
 *   tie. score = (wins + ties / 2) / (N - 1), the candidate's share of its comparisons.
 */

export const HIVE_QUALITY_WEIGHT = 0.7
export const HIVE_CONSENSUS_WEIGHT = 0.3

export interface HiveCandidate {
  readonly text: string
  /** Token logprobs as the model reported them; null when it reported none. */
  readonly logprobs: readonly number[] | null
}

export interface HiveScore {
  readonly tokens: number | null
  readonly mean_logprob: number | null
  readonly quality: number | null
  readonly consensus: number
  readonly score: number
}

/** Lower-cased words (letters and digits), as a set. */
export function wordSet(text: string): Set<string> {
  return new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])
}

export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1
  let shared = 0
  for (const word of a) if (b.has(word)) shared += 1
  return shared / (a.size + b.size - shared)
}

function round(value: number): number {
  return Math.round(value * 1e6) / 1e6
}

export function hiveScores(candidates: readonly HiveCandidate[]): HiveScore[] {
  const words = candidates.map((c) => wordSet(c.text))
  return candidates.map((candidate, i) => {
    const others = words.filter((_, j) => j !== i)
    const consensus =
      others.length === 0 ? 1 : others.reduce((sum, w) => sum + jaccard(words[i]!, w), 0) / others.length
    const logprobs = candidate.logprobs
    const usable = logprobs !== null && logprobs.length > 0 && logprobs.every(Number.isFinite)
    const mean = usable ? logprobs.reduce((sum, lp) => sum + lp, 0) / logprobs.length : null
    const quality = mean === null ? null : Math.exp(Math.min(0, mean))
    const score =
      quality === null ? consensus : HIVE_QUALITY_WEIGHT * quality + HIVE_CONSENSUS_WEIGHT * consensus
    return {
      tokens: usable ? logprobs.length : null,
      mean_logprob: mean === null ? null : round(mean),
      quality: quality === null ? null : round(quality),
      consensus: round(consensus),
      score: round(score),
    }
  })
}

export type JudgeVerdict = 'A' | 'B' | 'tie'

/** One judge call: candidate `first` shown as A, `second` as B. */
export interface JudgeComparison {
  readonly first: number
  readonly second: number
}

/** Every ordered pair (i, j), i != j: each unordered pair in both orders. */
export function judgeComparisons(n: number): JudgeComparison[] {
  const comparisons: JudgeComparison[] = []
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      comparisons.push({ first: i, second: j }, { first: j, second: i })
    }
  }
  return comparisons
}

export function comparisonKey(c: JudgeComparison): string {
  return `${c.first}>${c.second}`
}

export interface SwarmScore {
  readonly wins: number
  readonly ties: number
  readonly losses: number
  /** Pairs whose two orders disagreed (counted as ties). */
  readonly inconsistent: number
  readonly score: number
}

/** Which candidate a verdict prefers: the index, or null for a tie. */
function preferred(c: JudgeComparison, verdict: JudgeVerdict): number | null {
  if (verdict === 'A') return c.first
  if (verdict === 'B') return c.second
  return null
}

export function swarmScores(n: number, verdicts: ReadonlyMap<string, JudgeVerdict>): SwarmScore[] {
  const tally = Array.from({ length: n }, () => ({ wins: 0, ties: 0, losses: 0, inconsistent: 0 }))
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const forward = verdicts.get(comparisonKey({ first: i, second: j }))
      const backward = verdicts.get(comparisonKey({ first: j, second: i }))
      if (forward === undefined || backward === undefined) {
        throw new Error(`the pair ${i}, ${j} has not been judged in both orders`)
      }
      const a = preferred({ first: i, second: j }, forward)
      const b = preferred({ first: j, second: i }, backward)
      if (a !== null && a === b) {
        const loser = a === i ? j : i
        tally[a]!.wins += 1
        tally[loser]!.losses += 1
      } else {
        tally[i]!.ties += 1
        tally[j]!.ties += 1
        if (a !== b) {
          tally[i]!.inconsistent += 1
          tally[j]!.inconsistent += 1
        }
      }
    }
  }
  return tally.map((t) => ({ ...t, score: n <= 1 ? 1 : round((t.wins + t.ties / 2) / (n - 1)) }))
}
