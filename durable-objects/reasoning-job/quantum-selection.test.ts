import { describe, expect, it } from 'vitest'
import { SimulatorLimitError } from './quantum/statevector'
import {
  frequenciesToCounts,
  readSelection,
  selectForSimulationCloud,
  selectOnSimulator,
  simulateSelection,
} from './quantum-selection'

describe('reading a selection from shots', () => {
  it('picks the most frequent one-hot outcome; confidence is its share of the shots', () => {
    const r = readSelection(
      new Map([
        [4, 700],
        [1, 200],
        [2, 100],
      ]),
      3,
    )
    expect(r).toEqual({ valid: true, index: 2, bitstring: 4, confidence: 0.7, shots: 1000 })
  })
  it('an infeasible mode (no candidate, or several) is invalid and says which', () => {
    const none = readSelection(
      new Map([
        [0, 600],
        [2, 400],
      ]),
      3,
    )
    expect(none).toMatchObject({
      valid: false,
      bitstring: 0,
      confidence: 0.6,
      reason: 'the most frequent outcome 000 selects no candidates',
    })
    expect(readSelection(new Map([[3, 10]]), 3)).toMatchObject({
      valid: false,
      reason: /011 selects several/,
    })
    expect(readSelection(new Map([[8, 10]]), 3)).toMatchObject({ valid: false, reason: /out of range/ })
  })
  it('turns QPU frequencies back into counts', () => {
    expect([
      ...frequenciesToCounts(
        new Map([
          [1, 0.25],
          [2, 0.75],
        ]),
        200,
      ),
    ]).toEqual([
      [1, 50],
      [2, 150],
    ])
  })
})

describe('simulation_cloud', () => {
  it('selects the best-scored candidate with high confidence, the same way every time for one job', async () => {
    const scores = [-1.2, -0.3, -0.9, -0.7]
    const a = await simulateSelection(scores, 'job-42')
    expect(a.reading).toMatchObject({ valid: true, index: 1, shots: 1000 })
    if (a.reading.valid) expect(a.reading.confidence).toBeGreaterThan(0.9)
    expect((await simulateSelection(scores, 'job-42')).reading).toEqual(a.reading)
    expect(a.built.circuit.qubits).toBe(4)
  })
  it('the synchronous variant agrees on the selection and is reproducible', () => {
    const scores = [0.2, 0.9, 0.5]
    const a = selectOnSimulator(scores, 'job-7')
    expect(a.reading).toMatchObject({ valid: true, index: 1 })
    expect(selectOnSimulator(scores, 'job-7').reading).toEqual(a.reading)
  })
  it("refuses beyond the CPU budget with the simulator's error", async () => {
    await expect(
      simulateSelection([1, 2, 3], 'j', { bounds: { maxQubits: 20, maxWork: 1000 } }),
    ).rejects.toThrow(SimulatorLimitError)
  })
})

describe('simulation_cloud selector', () => {
  const classical = { index: 1, confidence: 0.9, backend: 'classical_argmax' }
  it('answers with the quantum selection and records the classical one beside it', () => {
    const s = selectForSimulationCloud([0.1, 0.8, 0.3], 'job-a', classical)
    expect(s).toMatchObject({
      index: 1,
      backend: 'qaoa-xy/statevector',
      fallbackReason: null,
      classicalIndex: 1,
    })
    expect(s.confidence).toBeGreaterThan(0.9)
  })
  it('beyond the simulator bounds: the classical answer, selector_unreachable, with the reason', () => {
    const s = selectForSimulationCloud([0.1, 0.8, 0.3], 'job-a', classical, { maxQubits: 2, maxWork: 1e9 })
    expect(s).toMatchObject({
      index: 1,
      backend: 'classical_argmax',
      fallbackReason: 'selector_unreachable',
      detail: /3 qubits/,
    })
  })
})
