/**
 * Selection: which candidate a job answers with, given the scores. The classical selector is
 * exact (argmax of the combined score, ties to the lowest index). A product that asks for real
 * quantum hardware (`managed_qpu`, `byopa_managed`) needs a quantum selector, which this release
 * does not have: `selectorFor` says so (`unavailable`), and the job ends `classical_fallback`
 * with `fallback_reason: selector_unreachable`, answered by the classical selector (never a
 * pretend "executed"). The quantum selector replaces that branch (docs/reasoning-jobs.md).
 *
 * selector_confidence (classical): the selected candidate's weight under a softmax of the scores
 * at temperature 0.1: 1 when one candidate clearly leads, 1/N when all scores are equal.
 */
import type { ReasoningProduct } from './job.schemas'

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

export type SelectorChoice =
  | { readonly kind: 'available'; readonly selector: Selector }
  /** The product needs a selector this deployment cannot reach: fall back to classical. */
  | { readonly kind: 'unavailable'; readonly reason: 'selector_unreachable'; readonly detail: string }

/** The selector a product's jobs use. */
export function selectorFor(product: ReasoningProduct): SelectorChoice {
  if (product === 'simulation_cloud') return { kind: 'available', selector: classicalSelector }
  return {
    kind: 'unavailable',
    reason: 'selector_unreachable',
    detail: `the quantum selector for ${product} is not available on this deployment`,
  }
}
