/**
 * QAOA for one-hot selection (Farhi, Goldstone & Gutmann, arXiv:1411.4028), with the
 * constraint-preserving XY mixer of the Quantum Alternating Operator Ansatz (Hadfield et al.,
 * arXiv:1709.03489):
 *
 *   |ψ(γ, β)⟩ = Π_{k=1..p} U_M(β_k)·U_C(γ_k) |W_N⟩
 *   |W_N⟩      = (|10…0⟩ + |01…0⟩ + … + |0…01⟩)/√N         every one-hot string, equal weight
 *   U_C(γ)     = e^{-iγ·C},  C(x) = -Σ s_i·x_i              rz(γ·s_i) on qubit i (up to a global phase)
 *   U_M(β)     = Π_{ring (i, i+1 mod N)} e^{-iβ(X_iX_j + Y_iY_j)/2}   xx(β) then yy(β) on each pair
 *
 * XX+YY only swaps |01⟩ ↔ |10⟩ on a pair, so the state never leaves the one-hot subspace: all the
 * probability stays on feasible strings (a test checks it; plain X-mixer QAOA from |+⟩^N leaves much
 * of it on infeasible ones, also shown by a test). On that subspace the one-hot QUBO's penalty
 * A(1-Σx)² is 0 and its linear A terms are a constant, so U_C needs no zz gates: the circuit is the
 * QUBO's exact evolution up to a global phase.
 *
 * Parameters are found classically against the simulator (minimising ⟨C⟩, i.e. maximising the
 * expected normalised score): a grid over (γ, β) at p = 1 refined by Nelder–Mead, then each extra
 * layer starts from the previous layer's parameters interpolated (Zhou et al., arXiv:1812.01041)
 * and is refined again. Deterministic: the same scores give the same circuit.
 */
import type { CircuitGate, IonqCircuit } from './ionq-circuit'
import { CIRCUIT_FORMAT } from './ionq-circuit'
import { oneHotSelectionQubo, type Qubo, quboEnergies } from './qubo'
import { checkBounds, type SimulatorBounds, StateVector } from './statevector'

export type QaoaMixer = 'xy-ring' | 'x'

export interface QaoaAngles {
  readonly gammas: readonly number[]
  readonly betas: readonly number[]
}

/** The ring of qubit pairs the XY mixer couples (one pair for N = 2). */
export function ringPairs(n: number): [number, number][] {
  if (n < 2) return []
  if (n === 2) return [[0, 1]]
  return Array.from({ length: n }, (_, i) => [i, (i + 1) % n] as [number, number])
}

/** Gates preparing |W_N⟩ from |0…0⟩: x, then for each k a controlled-ry and a cnot. */
export function wStateGates(n: number): CircuitGate[] {
  const gates: CircuitGate[] = [{ gate: 'x', target: 0 }]
  for (let k = 0; k < n - 1; k++) {
    // Leaves amplitude √(1/(n-k)) on qubit k and moves the rest on to qubit k+1.
    const theta = 2 * Math.acos(Math.sqrt(1 / (n - k)))
    gates.push({ gate: 'ry', control: k, target: k + 1, rotation: theta })
    gates.push({ gate: 'cnot', control: k + 1, target: k })
  }
  return gates
}

/** The QUBO cost layer as gates: rz for linear terms, zz (with rz corrections) for quadratic ones. */
export function quboPhaseGates(qubo: Qubo, gamma: number): CircuitGate[] {
  const { n, q } = qubo
  const gates: CircuitGate[] = []
  const linear = new Float64Array(n)
  for (let i = 0; i < n; i++) linear[i] = q[i * n + i]!
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const w = q[i * n + j]!
      if (w === 0) continue
      // x_i·x_j = (1 - Z_i - Z_j + Z_iZ_j)/4: a zz of γw/2 and half the weight on each linear term.
      gates.push({ gate: 'zz', targets: [i, j], rotation: (gamma * w) / 2 })
      linear[i] = linear[i]! + w / 2
      linear[j] = linear[j]! + w / 2
    }
  }
  // e^{-iγ·h·x_i} = e^{-iγh(1 - Z_i)/2} = rz(-γh) up to a global phase.
  for (let i = 0; i < n; i++)
    if (linear[i] !== 0) gates.push({ gate: 'rz', target: i, rotation: -gamma * linear[i]! })
  return gates
}

/** The selection circuit for normalised scores (N qubits, one per candidate). */
export function selectionCircuit(
  scores: readonly number[],
  angles: QaoaAngles,
  mixer: QaoaMixer = 'xy-ring',
): IonqCircuit {
  const n = scores.length
  if (angles.gammas.length !== angles.betas.length) throw new Error('one gamma and one beta per layer')
  const circuit: CircuitGate[] = []
  if (mixer === 'xy-ring') {
    circuit.push(...wStateGates(n))
    for (const [k, gamma] of angles.gammas.entries()) {
      for (let i = 0; i < n; i++) circuit.push({ gate: 'rz', target: i, rotation: gamma * scores[i]! })
      const beta = angles.betas[k]!
      for (const [a, b] of ringPairs(n)) {
        circuit.push({ gate: 'xx', targets: [a, b], rotation: beta })
        circuit.push({ gate: 'yy', targets: [a, b], rotation: beta })
      }
    }
  } else {
    const qubo = oneHotSelectionQubo(scores)
    for (let i = 0; i < n; i++) circuit.push({ gate: 'h', target: i })
    for (const [k, gamma] of angles.gammas.entries()) {
      circuit.push(...quboPhaseGates(qubo, gamma))
      for (let i = 0; i < n; i++) circuit.push({ gate: 'rx', target: i, rotation: 2 * angles.betas[k]! })
    }
  }
  return { format: CIRCUIT_FORMAT, gateset: 'qis', qubits: n, circuit }
}

/**
 * Evaluates ⟨C⟩ for many angle sets fast: the cost layer is one diagonal pass over a precomputed
 * energy table, the XY mixer one pass per ring pair touching only |01⟩/|10⟩. Equal to simulating
 * `selectionCircuit` gate by gate (up to a global phase; a test compares the probabilities).
 */
export class QaoaEvaluator {
  readonly n: number
  readonly energies: Float64Array
  private readonly state: StateVector
  private readonly initial: { re: Float64Array; im: Float64Array }
  private readonly pairs: [number, number][]
  /** Amplitude updates spent so far. */
  work = 0
  evaluations = 0

  readonly scores: readonly number[]
  readonly mixer: QaoaMixer
  private readonly bounds: SimulatorBounds | undefined

  constructor(scores: readonly number[], mixer: QaoaMixer = 'xy-ring', bounds?: SimulatorBounds) {
    this.scores = scores
    this.mixer = mixer
    this.bounds = bounds
    this.n = scores.length
    if (bounds) checkBounds(this.n, 0, bounds)
    const qubo = oneHotSelectionQubo(scores)
    this.energies = quboEnergies(qubo)
    this.state = new StateVector(this.n)
    this.pairs = ringPairs(this.n)
    // The initial state, prepared once: |W_N⟩ (XY) or |+⟩^N (X).
    const size = this.state.size
    const re = new Float64Array(size)
    const im = new Float64Array(size)
    if (mixer === 'xy-ring') {
      for (let i = 0; i < this.n; i++) re[1 << i] = 1 / Math.sqrt(this.n)
    } else {
      re.fill(1 / Math.sqrt(size))
    }
    this.initial = { re, im }
  }

  /** Runs the ansatz into the internal state; returns it (valid until the next call). */
  prepare(angles: QaoaAngles): StateVector {
    const p = angles.gammas.length
    const perLayer = 1 + (this.mixer === 'xy-ring' ? this.pairs.length : this.n)
    const cost = p * perLayer * this.state.size
    if (this.bounds) checkBounds(this.n, this.work + cost, this.bounds)
    this.work += cost
    this.evaluations++
    const s = this.state
    s.re.set(this.initial.re)
    s.im.set(this.initial.im)
    for (let k = 0; k < p; k++) {
      s.applyDiagonalPhase(this.energies, angles.gammas[k]!)
      const beta = angles.betas[k]!
      if (this.mixer === 'xy-ring') {
        for (const [a, b] of this.pairs) applyXy(s, a, b, beta)
      } else {
        const c = Math.cos(beta)
        const sn = Math.sin(beta)
        for (let q = 0; q < this.n; q++) s.applyMatrix(q, [c, 0, 0, -sn, 0, -sn, c, 0])
      }
    }
    return s
  }

  /** ⟨C⟩ = Σ p(x)·E(x): lower is better. */
  expectation(angles: QaoaAngles): number {
    return this.prepare(angles).expectation(this.energies)
  }
}

/** e^{-iβ(XX+YY)/2} on qubits a, b: cos β on |01⟩,|10⟩ and -i·sin β between them. */
function applyXy(s: StateVector, a: number, b: number, beta: number): void {
  const { re, im, size } = s
  const ba = 1 << a
  const bb = 1 << b
  const c = Math.cos(beta)
  const sn = Math.sin(beta)
  for (let i = 0; i < size; i++) {
    if (i & (ba | bb)) continue
    const i01 = i | bb
    const i10 = i | ba
    const xr = re[i01]!
    const xi = im[i01]!
    const yr = re[i10]!
    const yi = im[i10]!
    re[i01] = c * xr + sn * yi
    im[i01] = c * xi - sn * yr
    re[i10] = c * yr + sn * xi
    im[i10] = c * yi - sn * xr
  }
}

/** Nelder–Mead minimisation (standard coefficients), deterministic. */
export function nelderMead(
  f: (x: number[]) => number,
  start: readonly number[],
  options: { step?: number; maxEvaluations?: number; tolerance?: number } = {},
): { x: number[]; value: number; evaluations: number } {
  const step = options.step ?? 0.3
  const maxEvaluations = options.maxEvaluations ?? 200
  const tolerance = options.tolerance ?? 1e-7
  const dim = start.length
  let evaluations = 0
  const evaluate = (x: number[]) => {
    evaluations++
    return f(x)
  }
  let simplex = [start.slice(), ...start.map((_, i) => start.map((v, j) => (i === j ? v + step : v)))].map(
    (x) => ({
      x,
      value: evaluate(x),
    }),
  )
  while (evaluations < maxEvaluations) {
    simplex.sort((a, b) => a.value - b.value)
    const best = simplex[0]!
    const worst = simplex[dim]!
    if (Math.abs(worst.value - best.value) < tolerance) break
    const centroid = Array.from(
      { length: dim },
      (_, j) => simplex.slice(0, dim).reduce((s, p) => s + p.x[j]!, 0) / dim,
    )
    const along = (t: number) => centroid.map((c, j) => c + t * (worst.x[j]! - c))
    const reflected = along(-1)
    const fr = evaluate(reflected)
    if (fr < best.value) {
      const expanded = along(-2)
      const fe = evaluate(expanded)
      simplex[dim] = fe < fr ? { x: expanded, value: fe } : { x: reflected, value: fr }
    } else if (fr < simplex[dim - 1]!.value) {
      simplex[dim] = { x: reflected, value: fr }
    } else {
      const contracted = fr < worst.value ? along(-0.5) : along(0.5)
      const fc = evaluate(contracted)
      if (fc < Math.min(fr, worst.value)) {
        simplex[dim] = { x: contracted, value: fc }
      } else {
        simplex = simplex.map((p, i) =>
          i === 0 ? p : { x: p.x.map((v, j) => best.x[j]! + 0.5 * (v - best.x[j]!)), value: Number.NaN },
        )
        for (const p of simplex.slice(1)) p.value = evaluate(p.x)
      }
    }
  }
  simplex.sort((a, b) => a.value - b.value)
  return { x: simplex[0]!.x, value: simplex[0]!.value, evaluations }
}

export interface QaoaOptimisation {
  readonly angles: QaoaAngles
  /** ⟨C⟩ at the angles (the expected negative normalised score on feasible strings). */
  readonly expectation: number
  readonly layers: number
  readonly evaluations: number
  readonly work: number
}

export interface QaoaSearchOptions {
  /** Layers p (default 3). */
  readonly layers?: number
  readonly mixer?: QaoaMixer
  readonly bounds?: SimulatorBounds
  /** Grid points per angle at p = 1 (default 16 × 8). */
  readonly gridGamma?: number
  readonly gridBeta?: number
  readonly evaluationsPerLayer?: number
}

/** Finds angles for `scores` (normalised to [0, 1]) by the layer-by-layer search above. */
export function optimiseAngles(scores: readonly number[], options: QaoaSearchOptions = {}): QaoaOptimisation {
  const layers = options.layers ?? 3
  const mixer = options.mixer ?? 'xy-ring'
  const evaluator = new QaoaEvaluator(scores, mixer, options.bounds)
  const gridGamma = options.gridGamma ?? 16
  const gridBeta = options.gridBeta ?? 8
  const betaRange = mixer === 'xy-ring' ? Math.PI : Math.PI / 2
  // p = 1: a coarse grid, then Nelder–Mead from its best point.
  let best = { gammas: [0], betas: [0] } as QaoaAngles
  let bestValue = Number.POSITIVE_INFINITY
  for (let g = 1; g <= gridGamma; g++) {
    for (let b = 1; b <= gridBeta; b++) {
      const angles = {
        gammas: [(2 * Math.PI * g) / (gridGamma + 1)],
        betas: [(betaRange * b) / (gridBeta + 1)],
      }
      const v = evaluator.expectation(angles)
      if (v < bestValue - 1e-12) {
        best = angles
        bestValue = v
      }
    }
  }
  const perLayer = options.evaluationsPerLayer ?? 150
  const split = (x: number[], p: number): QaoaAngles => ({ gammas: x.slice(0, p), betas: x.slice(p) })
  let current = [...best.gammas, ...best.betas]
  for (let p = 1; p <= layers; p++) {
    if (p > 1) current = [...interpolate(current.slice(0, p - 1)), ...interpolate(current.slice(p - 1))]
    const result = nelderMead((x) => evaluator.expectation(split(x, p)), current, {
      maxEvaluations: perLayer,
      step: 0.2,
    })
    current = result.x
    // A deeper circuit only when it is better: fewer gates on hardware means less noise.
    if (result.value < bestValue - 1e-9) {
      best = split(result.x, p)
      bestValue = result.value
    }
  }
  return {
    angles: best,
    expectation: bestValue,
    layers: best.gammas.length,
    evaluations: evaluator.evaluations,
    work: evaluator.work,
  }
}

/** INTERP: p angles → p+1 angles along the same schedule. */
function interpolate(angles: readonly number[]): number[] {
  const p = angles.length
  return Array.from({ length: p + 1 }, (_, i) => {
    const left = i - 1 >= 0 ? angles[i - 1]! : 0
    const right = i < p ? angles[i]! : 0
    return (i / p) * left + ((p - i) / p) * right
  })
}
