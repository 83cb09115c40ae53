/**
 * The quantum selector's arithmetic (docs/quantum-selector.md): the selection circuit for a job's
 * candidate scores, and the selection read from measured shots.
 *
 * - The circuit: one qubit per candidate, XY-mixer QAOA from the W state (durable-objects/reasoning-job/quantum/qaoa.ts)
 *   on the scores normalised to [0, 1], angles found classically against the simulator.
 * - The outcome: the most frequent bitstring among the shots (ties to the smaller integer). A
 *   one-hot string selects its candidate; anything else (no bit, several bits: noise on hardware)
 *   is `invalid_selection`, and the job answers with the classical argmax instead.
 * - `selector_confidence`: the fraction of the shots that gave the chosen bitstring.
 * - simulation_cloud runs the circuit gate by gate on the product's statevector simulator and draws
 *   the shots with a generator seeded by the job id (the same job always measures the same shots).
 *   A QPU's answer is already shot frequencies; a provider's simulator answers exact probabilities,
 *   from which the shots are drawn the same seeded way.
 *
 * Selecting the largest of N numbers is classically trivial: this selector demonstrates the whole
 * hardware path faithfully; the classical argmax is always computed and recorded beside it.
 */
import type { IonqCircuit } from './quantum/ionq-circuit'
import { optimiseAngles, type QaoaOptimisation, selectionCircuit } from './quantum/qaoa'
import { isOneHot, normaliseScores, oneHotIndex } from './quantum/qubo'
import { SeededRandom, sampleShots } from './quantum/shot-sampler'
import { DEFAULT_SIMULATOR_BOUNDS, type SimulatorBounds, simulateCircuit } from './quantum/statevector'

export const DEFAULT_SHOTS = 1000
export const QAOA_LAYERS = 3

export interface SelectionCircuit {
  readonly circuit: IonqCircuit
  readonly optimisation: QaoaOptimisation
  readonly normalisedScores: readonly number[]
}

/** The circuit for these scores (throws SimulatorLimitError beyond the bounds). */
export function buildSelectionCircuit(
  scores: readonly number[],
  bounds: SimulatorBounds = DEFAULT_SIMULATOR_BOUNDS,
): SelectionCircuit {
  if (scores.length < 2) throw new Error('a selection circuit needs at least two candidates')
  const normalisedScores = normaliseScores(scores)
  const optimisation = optimiseAngles(normalisedScores, { layers: QAOA_LAYERS, bounds })
  return { circuit: selectionCircuit(normalisedScores, optimisation.angles), optimisation, normalisedScores }
}

export type QuantumReading =
  | {
      readonly valid: true
      readonly index: number
      readonly bitstring: number
      readonly confidence: number
      readonly shots: number
    }
  | {
      readonly valid: false
      readonly bitstring: number
      readonly confidence: number
      readonly shots: number
      readonly reason: string
    }

/** The selection from shot counts (basis-state integer → count) over `n` candidates. */
export function readSelection(counts: ReadonlyMap<number, number>, n: number): QuantumReading {
  let shots = 0
  let mode = -1
  let best = -1
  for (const [x, c] of [...counts.entries()].sort((a, b) => a[0] - b[0])) {
    shots += c
    if (c > best) {
      best = c
      mode = x
    }
  }
  if (shots === 0)
    return { valid: false, bitstring: 0, confidence: 0, shots: 0, reason: 'no shots were measured' }
  const confidence = Math.round((best / shots) * 1e6) / 1e6
  const width = Math.max(n, 1)
  const bits = mode.toString(2).padStart(width, '0')
  if (!isOneHot(mode)) {
    return {
      valid: false,
      bitstring: mode,
      confidence,
      shots,
      reason: `the most frequent outcome ${bits} selects ${mode === 0 ? 'no' : 'several'} candidates`,
    }
  }
  const index = oneHotIndex(mode)
  if (index >= n)
    return {
      valid: false,
      bitstring: mode,
      confidence,
      shots,
      reason: `the most frequent outcome ${bits} names a candidate out of range`,
    }
  return { valid: true, index, bitstring: mode, confidence, shots }
}

/** Draws `shots` from exact probabilities with the job's seeded generator. */
export async function drawShots(
  probabilities: ArrayLike<number> | ReadonlyMap<number, number>,
  shots: number,
  seed: string,
): Promise<Map<number, number>> {
  let dense: ArrayLike<number>
  if (probabilities instanceof Map) {
    const size = Math.max(0, ...probabilities.keys()) + 1
    const arr = new Float64Array(size)
    for (const [k, v] of probabilities) arr[k] = v
    dense = arr
  } else dense = probabilities as ArrayLike<number>
  return sampleShots(dense, shots, await SeededRandom.fromString(seed))
}

/** Shot frequencies from a QPU (probabilities that are multiples of 1/shots) back to counts. */
export function frequenciesToCounts(
  probabilities: ReadonlyMap<number, number>,
  shots: number,
): Map<number, number> {
  const counts = new Map<number, number>()
  for (const [k, p] of probabilities) {
    const c = Math.round(p * shots)
    if (c > 0) counts.set(k, c)
  }
  return counts
}

export const SIMULATOR_BACKEND = 'qaoa-xy/statevector'

/**
 * simulation_cloud, synchronously (for a selector called inside a step): the circuit on the
 * product's simulator, shots drawn with a generator seeded by `seed` (the job id).
 */
export function selectOnSimulator(
  scores: readonly number[],
  seed: string,
  options: { shots?: number; bounds?: SimulatorBounds } = {},
): { reading: QuantumReading; built: SelectionCircuit; work: number; counts: Map<number, number> } {
  const bounds = options.bounds ?? DEFAULT_SIMULATOR_BOUNDS
  const built = buildSelectionCircuit(scores, bounds)
  const run = simulateCircuit(built.circuit, {
    ...bounds,
    maxWork: Math.max(0, bounds.maxWork - built.optimisation.work),
  })
  const counts = sampleShots(
    run.state.probabilities(),
    options.shots ?? DEFAULT_SHOTS,
    SeededRandom.fromText(seed),
  )
  return {
    reading: readSelection(counts, scores.length),
    built,
    work: built.optimisation.work + run.work,
    counts,
  }
}

/** Each candidate's share of the shots (its one-hot string's count / shots): selection evidence. */
export function candidateFrequencies(counts: ReadonlyMap<number, number>, n: number): number[] {
  let shots = 0
  for (const c of counts.values()) shots += c
  return Array.from({ length: n }, (_, i) =>
    shots ? Math.round(((counts.get(1 << i) ?? 0) / shots) * 1e6) / 1e6 : 0,
  )
}

/** simulation_cloud: the circuit on the product's simulator, shots drawn with the job's seed. */
export async function simulateSelection(
  scores: readonly number[],
  seed: string,
  options: { shots?: number; bounds?: SimulatorBounds } = {},
): Promise<{ reading: QuantumReading; built: SelectionCircuit; work: number }> {
  const bounds = options.bounds ?? DEFAULT_SIMULATOR_BOUNDS
  const built = buildSelectionCircuit(scores, bounds)
  const run = simulateCircuit(built.circuit, {
    ...bounds,
    maxWork: Math.max(0, bounds.maxWork - built.optimisation.work),
  })
  const counts = await drawShots(run.state.probabilities(), options.shots ?? DEFAULT_SHOTS, seed)
  return { reading: readSelection(counts, scores.length), built, work: built.optimisation.work + run.work }
}

/** What a simulation_cloud job records: the quantum selection, or the classical one and why. */
export interface SimulationCloudSelection {
  readonly index: number
  readonly confidence: number
  readonly backend: string
  /** null: the quantum answer stands; otherwise the job answers with the classical argmax. */
  readonly fallbackReason: 'invalid_selection' | 'selector_unreachable' | null
  readonly detail: string | null
  /** The classical argmax, always computed and recorded beside the quantum answer. */
  readonly classicalIndex: number
  /** Each candidate's share of the shots (empty when the circuit did not run). */
  readonly frequencies: readonly number[]
}

/**
 * simulation_cloud's selector: the QAOA circuit on the product's simulator (seeded by the job id).
 * An invalid outcome → the classical argmax with `invalid_selection`; beyond the simulator's bounds →
 * the classical argmax with `selector_unreachable`. `classicalConfidence` is the classical
 * selector's own confidence for the fallback answer.
 */
export function selectForSimulationCloud(
  scores: readonly number[],
  jobId: string,
  classical: { index: number; confidence: number; backend: string },
  bounds: SimulatorBounds = DEFAULT_SIMULATOR_BOUNDS,
): SimulationCloudSelection {
  let frequencies: number[] = []
  const fallback = (
    reason: 'invalid_selection' | 'selector_unreachable',
    detail: string,
  ): SimulationCloudSelection => ({
    ...classical,
    fallbackReason: reason,
    detail,
    classicalIndex: classical.index,
    frequencies,
  })
  if (scores.length < 2)
    return { ...classical, fallbackReason: null, detail: null, classicalIndex: classical.index, frequencies }
  let reading: QuantumReading
  try {
    const run = selectOnSimulator(scores, jobId, { bounds })
    reading = run.reading
    frequencies = candidateFrequencies(run.counts, scores.length)
  } catch (err) {
    return fallback('selector_unreachable', err instanceof Error ? err.message : String(err))
  }
  if (!reading.valid) return fallback('invalid_selection', reading.reason)
  return {
    index: reading.index,
    confidence: reading.confidence,
    backend: SIMULATOR_BACKEND,
    fallbackReason: null,
    detail: null,
    classicalIndex: classical.index,
    frequencies,
  }
}
