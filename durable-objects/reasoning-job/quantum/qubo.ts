/**
 * Quadratic unconstrained binary optimisation: minimise E(x) = Σ_i Q_ii·x_i + Σ_{i<j} Q_ij·x_i·x_j
 * over bitstrings x (Glover, Kochenberger & Du, arXiv:1811.11538; Lucas, arXiv:1302.5843).
 *
 * Selecting one of N scored candidates, one-hot (x_i = 1 ⇔ candidate i is chosen):
 *   E(x) = -Σ s_i·x_i + A·(1 - Σ x_i)²,  A > max |s_i|
 * Expanding (x_i² = x_i) gives Q_ii = -s_i - A, Q_ij = 2A (i < j) and the constant A. Every
 * one-hot x has E = -s_i. A string with k ≠ 1 ones costs E ≥ A·(k-1)² - Σ(its k scores), which
 * is above every feasible energy once A > max|s_i| (k = 0: A > -s_i; k ≥ 2: A·(k-1)² > (k-1)·max|s|),
 * so the QUBO's minimum is the one-hot string of the best score (tests check it by enumeration).
 */

export interface Qubo {
  readonly n: number
  /** Upper-triangular, row-major n×n: linear terms on the diagonal. */
  readonly q: Float64Array
  readonly offset: number
}

export function quboEnergy(qubo: Qubo, x: number): number {
  const { n, q } = qubo
  let e = qubo.offset
  for (let i = 0; i < n; i++) {
    if (!((x >> i) & 1)) continue
    e += q[i * n + i]!
    for (let j = i + 1; j < n; j++) if ((x >> j) & 1) e += q[i * n + j]!
  }
  return e
}

/** E(x) for every basis state x (bit i of x = x_i, the simulator's order). */
export function quboEnergies(qubo: Qubo): Float64Array {
  const size = 2 ** qubo.n
  const out = new Float64Array(size)
  for (let x = 0; x < size; x++) out[x] = quboEnergy(qubo, x)
  return out
}

/** The exact minimum by enumeration (2^n strings; ties to the smallest integer). */
export function bruteForceMinimum(qubo: Qubo): { x: number; energy: number } {
  let best = 0
  let bestEnergy = Number.POSITIVE_INFINITY
  for (let x = 0; x < 2 ** qubo.n; x++) {
    const e = quboEnergy(qubo, x)
    if (e < bestEnergy - 1e-12) {
      best = x
      bestEnergy = e
    }
  }
  return { x: best, energy: bestEnergy }
}

/** One-hot selection QUBO of `scores` with penalty weight `penalty` (default: range + 1). */
export function oneHotSelectionQubo(scores: readonly number[], penalty?: number): Qubo {
  const n = scores.length
  const a = penalty ?? Math.max(...scores.map(Math.abs)) * 2 + 1
  if (!(a > Math.max(...scores.map(Math.abs))))
    throw new Error(`the penalty (${a}) must exceed every |score| (max ${Math.max(...scores.map(Math.abs))})`)
  const q = new Float64Array(n * n)
  for (let i = 0; i < n; i++) {
    q[i * n + i] = -scores[i]! - a
    for (let j = i + 1; j < n; j++) q[i * n + j] = 2 * a
  }
  return { n, q, offset: a }
}

export function isOneHot(x: number): boolean {
  return x > 0 && (x & (x - 1)) === 0
}

/** The candidate index of a one-hot basis state. */
export function oneHotIndex(x: number): number {
  return 31 - Math.clz32(x)
}

/**
 * Scores mapped to [0, 1] (min → 0, max → 1) so that the circuit's angles do not depend on the
 * scale of a scoring method; all-equal scores map to 0.5 each.
 */
export function normaliseScores(scores: readonly number[]): number[] {
  const lo = Math.min(...scores)
  const hi = Math.max(...scores)
  if (!(hi - lo > 1e-12)) return scores.map(() => 0.5)
  return scores.map((s) => (s - lo) / (hi - lo))
}
