/**
 * The classical selector: which candidate a job answers with, given the scores (argmax of the
 * combined score, ties to the lowest index). Every job computes it and records it beside the
 * quantum answer; it answers the job whenever the quantum selector cannot (classical_fallback,
 * docs/quantum-selector.md).
 *
 * selector_confidence (classical): the selected candidate's weight under a softmax of the scores
 * at temperature 0.1: 1 when one candidate clearly leads, 1/N when all scores are equal.
 */
export const CLASSICAL_BACKEND = 'classical_argmax'
export const SOFTMAX_TEMPERATURE = 0.1

export interface Selection {
  readonly index: number
  readonly confidence: number
  readonly backend: string
}

export interface Selector {
  readonly backend: string
  select(scores: readonly number[]): Selection
}

export function argmax(scores: readonly number[]): number {
  if (scores.length === 0) throw new Error('nothing to select from')
  let best = 0
  for (let i = 1; i < scores.length; i++) if (scores[i]! > scores[best]!) best = i
  return best
}

export function softmaxWeight(
  scores: readonly number[],
  index: number,
  temperature = SOFTMAX_TEMPERATURE,
): number {
  const max = Math.max(...scores)
  const weights = scores.map((s) => Math.exp((s - max) / temperature))
  const total = weights.reduce((a, b) => a + b, 0)
  return Math.round((weights[index]! / total) * 1e6) / 1e6
}

export const classicalSelector: Selector = {
  backend: CLASSICAL_BACKEND,
  select(scores) {
    const index = argmax(scores)
    return { index, confidence: softmaxWeight(scores, index), backend: CLASSICAL_BACKEND }
  },
}
