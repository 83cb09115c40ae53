/**
 * The fake IonQ's own reading and simulation of `ionq.circuit.v0` (ionq-circuit.ts): answers
 * worked out from the gates' definitions in IonQ's documentation, then a differential test
 * against the product's simulator (durable-objects/reasoning-job/quantum/statevector.ts). The two share no code, so
 * where they disagree one of them is wrong about IonQ's gates.
 */
import { describe, expect, it } from 'vitest'
import type { CircuitGate } from '../../durable-objects/reasoning-job/quantum/ionq-circuit.ts'
import { simulateCircuit } from '../../durable-objects/reasoning-job/quantum/statevector.ts'
import { IonqInputError, readCircuit, simulate } from './ionq-circuit.ts'

const run = (input: unknown) => Array.from(simulate(readCircuit(input)), (p) => Number(p.toFixed(10)))
const basis = (qubits: number, index: number) =>
  Array.from({ length: 2 ** qubits }, (_, i) => (i === index ? 1 : 0))

describe('answers from the gates’ definitions', () => {
  it('qubit k is bit k; a Bell pair and a four-qubit GHZ state', () => {
    expect(run({ qubits: 3, circuit: [{ gate: 'x', target: 0 }] })).toEqual(basis(3, 1))
    expect(
      run({
        qubits: 2,
        circuit: [
          { gate: 'h', target: 0 },
          { gate: 'cnot', control: 0, target: 1 },
        ],
      }),
    ).toEqual([0.5, 0, 0, 0.5])
    const ghz = run({
      qubits: 4,
      circuit: [{ gate: 'h', target: 0 }, ...[1, 2, 3].map((t) => ({ gate: 'cnot', control: 0, target: t }))],
    })
    expect([ghz[0], ghz[15]]).toEqual([0.5, 0.5])
  })

  it('multi-controlled gates act only when every control is 1 (Toffoli with three controls, a doubly-controlled ry)', () => {
    for (let inputs = 0; inputs < 8; inputs++) {
      const set = [0, 1, 2].filter((q) => inputs & (1 << q)).map((q) => ({ gate: 'x', target: q }))
      const out = run({ qubits: 4, circuit: [...set, { gate: 'not', controls: [0, 1, 2], target: 3 }] })
      expect(out, `inputs ${inputs}`).toEqual(basis(4, inputs === 7 ? 15 : inputs))
    }
    // ry(θ) on |0⟩: sin²(θ/2) on |1⟩.
    const theta = 1.1
    const rotated = run({
      qubits: 3,
      circuit: [
        { gate: 'x', target: 0 },
        { gate: 'x', target: 1 },
        { gate: 'ry', controls: [0, 1], target: 2, rotation: theta },
      ],
    })
    expect(rotated[7]).toBeCloseTo(Math.sin(theta / 2) ** 2, 9)
    expect(rotated[3]).toBeCloseTo(Math.cos(theta / 2) ** 2, 9)
  })

  it('native gates in turns: gpi(0) is X, a partial ms moves sin²(π·angle) of |00⟩ to |11⟩', () => {
    expect(run({ gateset: 'native', qubits: 1, circuit: [{ gate: 'gpi', target: 0, phase: 0 }] })).toEqual([
      0, 1,
    ])
    const full = run({
      gateset: 'native',
      qubits: 2,
      circuit: [{ gate: 'ms', targets: [0, 1], phases: [0, 0.3] }],
    })
    expect(full).toEqual([0.5, 0, 0, 0.5])
    const angle = 0.1
    const partial = simulate(
      readCircuit({
        gateset: 'native',
        qubits: 2,
        circuit: [{ gate: 'ms', targets: [0, 1], phases: [0.2, 0.7], angle }],
      }),
    )
    expect(partial[3]).toBeCloseTo(Math.sin(Math.PI * angle) ** 2, 9)
  })

  it('xx with rotation π is a full X⊗X (exp(-i·π/2·X⊗X) = -i·X⊗X), and with one control only when it is 1', () => {
    expect(run({ qubits: 2, circuit: [{ gate: 'xx', targets: [0, 1], rotation: Math.PI }] })).toEqual(
      basis(2, 3),
    )
    const off = run({ qubits: 3, circuit: [{ gate: 'xx', control: 2, targets: [0, 1], rotation: Math.PI }] })
    expect(off).toEqual(basis(3, 0))
    const on = run({
      qubits: 3,
      circuit: [
        { gate: 'x', target: 2 },
        { gate: 'yy', control: 2, targets: [0, 1], rotation: Math.PI },
      ],
    })
    expect(on).toEqual(basis(3, 7))
  })
})

describe('what IonQ refuses, named by field', () => {
  it.each([
    [{ qubits: 1, circuit: [{ gate: 'foo', target: 0 }] }, 'circuit[0].gate', /unknown gate "foo"/],
    [{ qubits: 2, circuit: [{ gate: 'h', target: 2 }] }, 'circuit[0].target', /qubit 2 is out of range/],
    [{ qubits: 2, circuit: [{ gate: 'rx', target: 0 }] }, 'circuit[0].rotation', /needs "rotation"/],
    [{ qubits: 2, circuit: [{ gate: 'cnot', target: 0 }] }, 'circuit[0].control', /needs a "control"/],
    [{ qubits: 2, circuit: [{ gate: 'x', control: 0, target: 0 }] }, 'circuit[0].control', /both a control/],
    [{ qubits: 2, circuit: [{ gate: 'h', target: 0, phase: 0.1 }] }, 'circuit[0].phase', /native/],
    [
      { gateset: 'native', qubits: 2, circuit: [{ gate: 'h', target: 0 }] },
      'circuit[0].gate',
      /unknown native/,
    ],
    [
      {
        gateset: 'native',
        qubits: 2,
        circuit: [{ gate: 'ms', targets: [0, 1], phases: [0, 0], angle: 0.3 }],
      },
      'circuit[0].angle',
      /0 to 0.25/,
    ],
    [{ qubits: 0, circuit: [] }, 'qubits', /positive integer/],
    [{ qubits: 1, circuit: [{ gate: 'h', target: 0, rotaton: 1 }] }, 'circuit[0].rotaton', /not a field/],
  ])('%#: %s', (input, field, message) => {
    const error = (() => {
      try {
        readCircuit(input)
      } catch (err) {
        return err
      }
    })()
    expect(error).toBeInstanceOf(IonqInputError)
    expect((error as IonqInputError).field).toBe(field)
    expect((error as IonqInputError).message).toMatch(message)
  })
})

/** A linear congruential generator: the same circuits on every run. */
function lcg(seed: number) {
  let s = seed
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s / 2 ** 32
  }
}

function randomGate(rand: () => number, qubits: number, native: boolean): CircuitGate {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!
  const order = Array.from({ length: qubits }, (_, i) => i).sort(() => rand() - 0.5)
  const angle = (rand() - 0.5) * 4 * Math.PI
  if (native) {
    if (qubits < 2 || rand() < 0.5) return { gate: pick(['gpi', 'gpi2']), target: order[0]!, phase: rand() }
    if (rand() < 0.5) return { gate: 'zz', targets: [order[0]!, order[1]!], angle: rand() }
    return { gate: 'ms', targets: [order[0]!, order[1]!], phases: [rand(), rand()], angle: rand() * 0.25 }
  }
  const pair = qubits >= 2 && rand() < 0.3
  const gate = pair
    ? pick(['swap', 'xx', 'yy', 'zz'])
    : pick(['x', 'y', 'z', 'h', 's', 'si', 't', 'ti', 'v', 'vi', 'rx', 'ry', 'rz'])
  const targets = pair ? order.slice(0, 2) : order.slice(0, 1)
  const free = order.slice(targets.length)
  const controls = free.slice(0, Math.floor(rand() * Math.min(free.length, 3) + (rand() < 0.5 ? 0 : 0.99)))
  return {
    gate,
    ...(pair ? { targets: targets as [number, number] } : { target: targets[0]! }),
    ...(controls.length === 1 ? { control: controls[0]! } : controls.length > 1 ? { controls } : {}),
    ...(['rx', 'ry', 'rz', 'xx', 'yy', 'zz'].includes(gate) ? { rotation: angle } : {}),
  }
}

describe('differential: the fake and the product simulate IonQ circuits alike', () => {
  it('40 random qis circuits of 1 to 5 qubits (controls up to three, pair gates controlled too) and 20 native ones', () => {
    const rand = lcg(30)
    for (let t = 0; t < 60; t++) {
      const native = t >= 40
      const qubits = 1 + (t % 5)
      const circuit = Array.from({ length: 6 + (t % 7) }, () => randomGate(rand, qubits, native))
      const input = { gateset: native ? 'native' : 'qis', qubits, circuit } as const
      const fake = simulate(readCircuit(input))
      const product = simulateCircuit(input).state.probabilities()
      fake.forEach((p, i) => {
        expect(p, `${JSON.stringify(input)} state ${i}`).toBeCloseTo(product[i]!, 9)
      })
    }
  })
})
