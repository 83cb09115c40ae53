import { describe, expect, it } from 'vitest'
import { CircuitError, type CircuitGate } from './ionq-circuit'
import { probabilityMap, SimulatorLimitError, StateVector, simulateCircuit } from './statevector'

const probs = (qubits: number, circuit: CircuitGate[]) => [
  ...simulateCircuit({ qubits, circuit }).state.probabilities(),
]
const close = (a: readonly number[], b: readonly number[]) => {
  for (const [i, v] of a.entries()) expect(v).toBeCloseTo(b[i]!, 12)
}

describe('bit order (IonQ: qubit k is bit k of the basis-state integer)', () => {
  it('x on qubit 0 of three qubits is state 1 (binary 001), on qubit 2 state 4 (binary 100)', () => {
    expect(
      probabilityMap(
        simulateCircuit({ qubits: 3, circuit: [{ gate: 'x', target: 0 }] }).state.probabilities(),
      ),
    ).toEqual({ 1: 1 })
    expect(
      probabilityMap(
        simulateCircuit({ qubits: 3, circuit: [{ gate: 'x', target: 2 }] }).state.probabilities(),
      ),
    ).toEqual({ 4: 1 })
  })
  it('cnot flips the target where the control is 1', () => {
    const p = probs(2, [
      { gate: 'x', target: 1 },
      { gate: 'cnot', control: 1, target: 0 },
    ])
    close(p, [0, 0, 0, 1])
  })
})

describe('known states', () => {
  it('Bell: h, cnot → |00⟩ and |11⟩ with probability ½ each', () => {
    close(
      probs(2, [
        { gate: 'h', target: 0 },
        { gate: 'cnot', control: 0, target: 1 },
      ]),
      [0.5, 0, 0, 0.5],
    )
  })
  it.each([3, 5, 8])('GHZ on %i qubits: all zeros and all ones, ½ each', (n) => {
    const circuit: CircuitGate[] = [{ gate: 'h', target: 0 }]
    for (let q = 1; q < n; q++) circuit.push({ gate: 'cnot', control: q - 1, target: q })
    const p = probs(n, circuit)
    expect(p[0]).toBeCloseTo(0.5, 12)
    expect(p[2 ** n - 1]).toBeCloseTo(0.5, 12)
    expect(p.reduce((a, b) => a + b)).toBeCloseTo(1, 12)
  })
  it('a Toffoli (x with two controls) is the classical truth table', () => {
    for (let input = 0; input < 8; input++) {
      const circuit: CircuitGate[] = []
      for (let q = 0; q < 3; q++) if ((input >> q) & 1) circuit.push({ gate: 'x', target: q })
      circuit.push({ gate: 'x', controls: [0, 1], target: 2 })
      const expected = (input & 3) === 3 ? input ^ 4 : input
      expect(probs(3, circuit)[expected]).toBeCloseTo(1, 12)
    }
  })
})

describe('rotations against closed forms', () => {
  const angles = Array.from({ length: 25 }, (_, i) => -2 * Math.PI + (i * 4 * Math.PI) / 24)
  it.each(['rx', 'ry'])('%s(θ)|0⟩: P(1) = sin²(θ/2)', (gate) => {
    for (const theta of angles) {
      expect(probs(1, [{ gate, target: 0, rotation: theta }])[1]).toBeCloseTo(Math.sin(theta / 2) ** 2, 12)
    }
  })
  it('h rz(θ) h |0⟩: P(0) = cos²(θ/2)', () => {
    for (const theta of angles) {
      const p = probs(1, [
        { gate: 'h', target: 0 },
        { gate: 'rz', target: 0, rotation: theta },
        { gate: 'h', target: 0 },
      ])
      expect(p[0]).toBeCloseTo(Math.cos(theta / 2) ** 2, 12)
    }
  })
  it.each(['xx', 'yy'])('%s(θ)|00⟩: P(11) = sin²(θ/2), nothing on 01 or 10', (gate) => {
    for (const theta of angles) {
      const p = probs(2, [{ gate, targets: [0, 1], rotation: theta }])
      expect(p[3]).toBeCloseTo(Math.sin(theta / 2) ** 2, 12)
      expect(p[1]! + p[2]!).toBeCloseTo(0, 12)
    }
  })
  it('h⊗h zz(θ) h⊗h |00⟩: P(11) = sin²(θ/2)', () => {
    for (const theta of angles) {
      const p = probs(2, [
        { gate: 'h', target: 0 },
        { gate: 'h', target: 1 },
        { gate: 'zz', targets: [0, 1], rotation: theta },
        { gate: 'h', target: 0 },
        { gate: 'h', target: 1 },
      ])
      expect(p[3]).toBeCloseTo(Math.sin(theta / 2) ** 2, 12)
    }
  })
  it('a controlled ry rotates only where the control is 1', () => {
    const theta = 1.1
    const p = probs(2, [
      { gate: 'h', target: 0 },
      { gate: 'ry', control: 0, target: 1, rotation: theta },
    ])
    close(p, [0.5, 0.5 * Math.cos(theta / 2) ** 2, 0, 0.5 * Math.sin(theta / 2) ** 2])
  })
})

describe('gate identities (amplitudes, not only probabilities)', () => {
  const amplitudes = (n: number, circuit: CircuitGate[]) => {
    const { state } = simulateCircuit({ qubits: n, circuit })
    return [...state.re].map((r, i) => [r, state.im[i]!] as const)
  }
  const prep: CircuitGate[] = [
    { gate: 'ry', target: 0, rotation: 0.7 },
    { gate: 'rz', target: 0, rotation: 0.3 },
  ]
  const same = (a: CircuitGate[], b: CircuitGate[]) => {
    const x = amplitudes(1, [...prep, ...a])
    const y = amplitudes(1, [...prep, ...b])
    x.forEach(([r, i], k) => {
      expect(r).toBeCloseTo(y[k]![0], 12)
      expect(i).toBeCloseTo(y[k]![1], 12)
    })
  }
  it('v·v = x, s·s = z, t·t = s, h·z·h = x, s·si = t·ti = v·vi = identity', () => {
    same(
      [
        { gate: 'v', target: 0 },
        { gate: 'v', target: 0 },
      ],
      [{ gate: 'x', target: 0 }],
    )
    same(
      [
        { gate: 's', target: 0 },
        { gate: 's', target: 0 },
      ],
      [{ gate: 'z', target: 0 }],
    )
    same(
      [
        { gate: 't', target: 0 },
        { gate: 't', target: 0 },
      ],
      [{ gate: 's', target: 0 }],
    )
    same(
      [
        { gate: 'h', target: 0 },
        { gate: 'z', target: 0 },
        { gate: 'h', target: 0 },
      ],
      [{ gate: 'x', target: 0 }],
    )
    for (const [g, inv] of [
      ['s', 'si'],
      ['t', 'ti'],
      ['v', 'vi'],
    ] as const)
      same(
        [
          { gate: g, target: 0 },
          { gate: inv, target: 0 },
        ],
        [],
      )
  })
  it('y = i·x·z; native gpi(0) = x and gpi2(0)·gpi2(0) = -i·x', () => {
    const y = amplitudes(1, [...prep, { gate: 'y', target: 0 }])
    const xz = amplitudes(1, [...prep, { gate: 'z', target: 0 }, { gate: 'x', target: 0 }])
    y.forEach(([r, i], k) => {
      expect(r).toBeCloseTo(-xz[k]![1], 12)
      expect(i).toBeCloseTo(xz[k]![0], 12)
    })
    const gpi = simulateCircuit({
      qubits: 1,
      gateset: 'native',
      circuit: [{ gate: 'gpi', target: 0, phase: 0 }],
    })
    expect(gpi.state.re[1]).toBeCloseTo(1, 12)
    const gpi2 = simulateCircuit({
      qubits: 1,
      gateset: 'native',
      circuit: [
        { gate: 'gpi2', target: 0, phase: 0 },
        { gate: 'gpi2', target: 0, phase: 0 },
      ],
    })
    expect(gpi2.state.im[1]).toBeCloseTo(-1, 12)
  })
  it('native ms(0, 0) on |00⟩ is (|00⟩ - i|11⟩)/√2', () => {
    const { state } = simulateCircuit({
      qubits: 2,
      gateset: 'native',
      circuit: [{ gate: 'ms', targets: [0, 1], phases: [0, 0] }],
    })
    expect(state.re[0]).toBeCloseTo(Math.SQRT1_2, 12)
    expect(state.im[3]).toBeCloseTo(-Math.SQRT1_2, 12)
  })
  it('swap exchanges the qubits', () => {
    close(
      probs(3, [
        { gate: 'x', target: 0 },
        { gate: 'swap', targets: [0, 2] },
      ]),
      [0, 0, 0, 0, 1, 0, 0, 0],
    )
  })
})

describe('validation (clear errors naming the field)', () => {
  const fails = (input: unknown, message: RegExp) => expect(() => simulateCircuit(input)).toThrow(message)
  it('refuses unknown gates, qubits out of range and missing parameters', () => {
    fails({ qubits: 2, circuit: [{ gate: 'foo', target: 0 }] }, /circuit\[0\]\.gate: unknown gate "foo"/)
    fails(
      { qubits: 2, circuit: [{ gate: 'h', target: 2 }] },
      /circuit\[0\]\.target: qubit 2 is out of range: the circuit declares 2 qubits/,
    )
    fails(
      { qubits: 2, circuit: [{ gate: 'rx', target: 0 }] },
      /circuit\[0\]\.rotation: gate "rx" needs "rotation" \(radians\)/,
    )
    fails({ qubits: 2, circuit: [{ gate: 'cnot', target: 0 }] }, /gate "cnot" needs a "control"/)
    fails(
      { qubits: 2, circuit: [{ gate: 'x', control: 0, target: 0 }] },
      /qubit 0 is both a control and a target/,
    )
    fails({ qubits: 2, circuit: [{ gate: 'xx', targets: [1, 1], rotation: 1 }] }, /two different qubits/)
    fails({ qubits: 2, gateset: 'native', circuit: [{ gate: 'h', target: 0 }] }, /unknown native gate "h"/)
    fails({ qubits: 0, circuit: [] }, /qubits/)
    fails({ qubits: 1, circuit: [{ gate: 'h', target: 0, extra: 1 }] }, /circuit\.0/)
    expect(() => simulateCircuit({ qubits: 1, circuit: [{ gate: 'x' }] })).toThrow(CircuitError)
  })
})

describe('bounds', () => {
  it('refuses more qubits than the bound, before allocating the state', () => {
    expect(() => simulateCircuit({ qubits: 30, circuit: [] })).toThrow(SimulatorLimitError)
    expect(() => simulateCircuit({ qubits: 30, circuit: [] })).toThrow(
      /30 qubits; this simulator runs at most 20 \(a state of 30 qubits needs 16 GiB\)/,
    )
  })
  it('refuses a circuit whose work exceeds the CPU budget, naming both numbers', () => {
    const circuit = Array.from({ length: 100 }, () => ({ gate: 'h', target: 0 }))
    expect(() => simulateCircuit({ qubits: 10, circuit }, { maxQubits: 20, maxWork: 50_000 })).toThrow(
      /1\.02e\+5 amplitude updates .* more than the CPU budget of 5\.00e\+4/,
    )
  })
})

describe('state', () => {
  it('stays normalised through a long random circuit', () => {
    const s = new StateVector(6)
    let seed = 7
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed / 2 ** 31
    }
    const names = ['h', 'x', 'y', 'rx', 'ry', 'rz', 't', 'v']
    for (let k = 0; k < 400; k++) {
      const target = Math.floor(rand() * 6)
      const control = (target + 1 + Math.floor(rand() * 5)) % 6
      s.apply({
        kind: 'single',
        name: names[k % names.length]!,
        target,
        controls: k % 3 ? [] : [control],
        param: rand() * 6,
      })
      if (k % 5 === 0)
        s.apply({
          kind: 'pair',
          name: ['xx', 'yy', 'zz'][k % 3]!,
          targets: [target, control],
          controls: [],
          param: rand() * 6,
        })
    }
    expect(s.probabilities().reduce((a, b) => a + b)).toBeCloseTo(1, 10)
  })
  it('probabilityMap keys basis states by decimal integers and leaves zeros out', () => {
    const { state } = simulateCircuit({ qubits: 2, circuit: [{ gate: 'h', target: 1 }] })
    expect(probabilityMap(state.probabilities())).toEqual({ 0: 0.5, 2: 0.5 })
  })
})
