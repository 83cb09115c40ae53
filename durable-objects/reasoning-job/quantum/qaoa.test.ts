import { describe, expect, it } from 'vitest'
import { optimiseAngles, QaoaEvaluator, quboPhaseGates, selectionCircuit, wStateGates } from './qaoa'
import {
  bruteForceMinimum,
  isOneHot,
  normaliseScores,
  oneHotIndex,
  oneHotSelectionQubo,
  type Qubo,
  quboEnergy,
} from './qubo'
import { SimulatorLimitError, simulateCircuit } from './statevector'

/** A deterministic generator for test inputs (not the product's sampler). */
function lcg(seed: number) {
  let s = seed
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s / 2 ** 32
  }
}

function feasibleMass(p: ArrayLike<number>): number {
  let m = 0
  for (let i = 0; i < p.length; i++) if (isOneHot(i)) m += p[i]!
  return m
}

function argmaxOf(values: ArrayLike<number>): number {
  let best = 0
  for (let i = 1; i < values.length; i++) if (values[i]! > values[best]!) best = i
  return best
}

describe('the one-hot selection QUBO', () => {
  it('has its brute-force minimum at the one-hot string of the best score, for 300 random score sets', () => {
    const rand = lcg(1)
    for (let t = 0; t < 300; t++) {
      const n = 2 + (t % 6)
      const scores = Array.from({ length: n }, () => rand() * 4 - 2)
      const qubo = oneHotSelectionQubo(scores)
      const { x, energy } = bruteForceMinimum(qubo)
      expect(isOneHot(x)).toBe(true)
      expect(oneHotIndex(x)).toBe(argmaxOf(scores))
      expect(energy).toBeCloseTo(-Math.max(...scores), 9)
      // Every one-hot string costs exactly minus its score.
      for (let i = 0; i < n; i++) expect(quboEnergy(qubo, 1 << i)).toBeCloseTo(-scores[i]!, 9)
    }
  })
  it('refuses a penalty that does not exceed every score', () => {
    expect(() => oneHotSelectionQubo([0.5, 2], 1.5)).toThrow(/must exceed every \|score\|/)
  })
  it('normalises scores to [0, 1], all-equal scores to ½', () => {
    expect(normaliseScores([-3, -1, -2])).toEqual([0, 1, 0.5])
    expect(normaliseScores([4, 4])).toEqual([0.5, 0.5])
  })
})

describe('circuits', () => {
  it.each([2, 3, 4, 5, 8])(
    'the W-state gates give 1/%i on every one-hot string and nothing elsewhere',
    (n) => {
      const p = simulateCircuit({ qubits: n, circuit: wStateGates(n) }).state.probabilities()
      for (let i = 0; i < 2 ** n; i++) expect(p[i]).toBeCloseTo(isOneHot(i) ? 1 / n : 0, 12)
    },
  )

  it('the XY mixer keeps all probability on feasible strings at any angles (p = 3)', () => {
    const rand = lcg(2)
    for (let t = 0; t < 40; t++) {
      const n = 2 + (t % 6)
      const scores = normaliseScores(Array.from({ length: n }, rand))
      const angles = {
        gammas: [rand() * 6, rand() * 6, rand() * 6],
        betas: [rand() * 3, rand() * 3, rand() * 3],
      }
      const p = simulateCircuit(selectionCircuit(scores, angles)).state.probabilities()
      expect(feasibleMass(p)).toBeCloseTo(1, 12)
    }
  })

  it('the fast evaluator and the gate-by-gate circuit give the same distribution, for both mixers', () => {
    const rand = lcg(3)
    for (const mixer of ['xy-ring', 'x'] as const) {
      for (let t = 0; t < 20; t++) {
        const n = 2 + (t % 5)
        const scores = normaliseScores(Array.from({ length: n }, rand))
        const angles = { gammas: [rand() * 6, rand() * 6], betas: [rand() * 3, rand() * 3] }
        const gates = simulateCircuit(selectionCircuit(scores, angles, mixer)).state.probabilities()
        const fast = new QaoaEvaluator(scores, mixer).prepare(angles).probabilities()
        for (const [i, v] of gates.entries()) expect(v).toBeCloseTo(fast[i]!, 10)
      }
    }
  })

  it('the QUBO cost layer as gates multiplies each basis state by e^{-iγE(x)} (up to one global phase)', () => {
    const rand = lcg(4)
    const n = 4
    const q = new Float64Array(n * n)
    for (let i = 0; i < n; i++) for (let j = i; j < n; j++) q[i * n + j] = rand() * 4 - 2
    const qubo: Qubo = { n, q, offset: 0 }
    const gamma = 0.83
    const h = Array.from({ length: n }, (_, i) => ({ gate: 'h', target: i }))
    const { state } = simulateCircuit({ qubits: n, circuit: [...h, ...quboPhaseGates(qubo, gamma)] })
    const phases = Array.from(
      { length: 2 ** n },
      (_, x) => Math.atan2(state.im[x]!, state.re[x]!) + gamma * quboEnergy(qubo, x),
    )
    const wrap = (a: number) => Math.atan2(Math.sin(a), Math.cos(a))
    for (const phase of phases) expect(wrap(phase - phases[0]!)).toBeCloseTo(0, 9)
  })
})

describe('QAOA against brute force', () => {
  it('the optimised XY circuit puts its most probable outcome on the brute-force minimum (N = 2 to 6)', () => {
    const rand = lcg(5)
    for (let t = 0; t < 25; t++) {
      const n = 2 + (t % 5)
      // Distinct scores with a clear leader (gap ≥ 0.15 after normalising), as selection needs.
      const raw = Array.from({ length: n }, rand)
      const scores = normaliseScores(raw)
      const sorted = [...scores].sort((a, b) => b - a)
      if (sorted[0]! - sorted[1]! < 0.15) continue
      const { x } = bruteForceMinimum(oneHotSelectionQubo(scores))
      const result = optimiseAngles(scores)
      const p = simulateCircuit(selectionCircuit(scores, result.angles)).state.probabilities()
      expect(argmaxOf(p)).toBe(x)
      expect(p[x]!).toBeGreaterThan(1 / n)
    }
  })

  it('plain X-mixer QAOA from |+⟩^N leaves probability on infeasible strings (why the XY mixer is used)', () => {
    const scores = normaliseScores([0.2, 0.9, 0.5, 0.85])
    const x = optimiseAngles(scores, { mixer: 'x' })
    const p = simulateCircuit(selectionCircuit(scores, x.angles, 'x')).state.probabilities()
    expect(feasibleMass(p)).toBeLessThan(0.95)
    const xy = optimiseAngles(scores)
    const q = simulateCircuit(selectionCircuit(scores, xy.angles)).state.probabilities()
    expect(feasibleMass(q)).toBeCloseTo(1, 12)
    expect(q[2]!).toBeGreaterThan(0.9) // candidate 1 (score 0.9) is the one-hot string 0b0010
  })

  it('is deterministic and stays within the work bound, or refuses clearly', () => {
    const scores = normaliseScores([0.1, 0.7, 0.4])
    expect(optimiseAngles(scores)).toEqual(optimiseAngles(scores))
    const spent = optimiseAngles(scores).work
    expect(spent).toBeGreaterThan(0)
    expect(() => optimiseAngles(scores, { bounds: { maxQubits: 20, maxWork: spent / 2 } })).toThrow(
      SimulatorLimitError,
    )
    expect(() =>
      optimiseAngles(
        Array.from({ length: 21 }, (_, i) => i / 20),
        { bounds: { maxQubits: 20, maxWork: 1e9 } },
      ),
    ).toThrow(/21 qubits/)
  })
})
