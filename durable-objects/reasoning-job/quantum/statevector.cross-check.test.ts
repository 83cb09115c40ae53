/**
 * Differential test against an independent simulator from the registry: `quantum-circuit`
 * (quantastica, MIT; a devDependency, never bundled). Random circuits over the whole gate set run
 * on both; the amplitudes must agree up to one global phase.
 *
 * Conventions bridged here, each checked by this test: quantum-circuit orders qubits like IonQ
 * (qubit k = bit k); its `xx`/`yy` take θ in exp(-iθ·P⊗P) where IonQ's `rotation` is exp(-i·θ/2·P⊗P),
 * so they get rotation/2; its `zz` already uses θ/2; its native phases are radians, IonQ's turns.
 */
import QuantumCircuit from 'quantum-circuit'
import { describe, expect, it } from 'vitest'
import type { CircuitGate } from './ionq-circuit'
import { simulateCircuit } from './statevector'

type QcGate = { name: string; wires: number[]; params?: Record<string, number> }

function toQuantumCircuit(g: CircuitGate): QcGate {
  const controls = [...(g.control === undefined ? [] : [g.control]), ...(g.controls ?? [])]
  const target = g.target ?? g.targets?.[0]
  const rot = g.rotation ?? 0
  const turns = (t: number | undefined) => 2 * Math.PI * (t ?? 0)
  if (controls.length > 0) {
    const name = { x: controls.length === 2 ? 'ccx' : 'cx', cnot: 'cx', ry: 'cry', rz: 'crz', rx: 'crx' }[
      g.gate
    ]
    if (!name) throw new Error(`no controlled ${g.gate} in the generator`)
    const params: Record<string, number> | undefined =
      g.gate === 'ry' || g.gate === 'rx' ? { theta: rot } : g.gate === 'rz' ? { phi: rot } : undefined
    return { name, wires: [...controls, target!], ...(params ? { params } : {}) }
  }
  switch (g.gate) {
    case 'rx':
    case 'ry':
      return { name: g.gate, wires: [target!], params: { theta: rot } }
    case 'rz':
      return { name: 'rz', wires: [target!], params: { phi: rot } }
    case 'xx':
    case 'yy':
      return { name: g.gate, wires: g.targets!, params: { theta: rot / 2 } }
    case 'zz':
      return { name: 'zz', wires: g.targets!, params: { theta: rot } }
    case 'swap':
      return { name: 'swap', wires: g.targets! }
    case 'gpi':
    case 'gpi2':
      return { name: g.gate, wires: [target!], params: { phi: turns(g.phase) } }
    case 'ms':
      return {
        name: 'ms',
        wires: g.targets!,
        params: { phi0: turns(g.phases?.[0]), phi1: turns(g.phases?.[1]) },
      }
    default: {
      const names: Record<string, string> = { si: 'sdg', ti: 'tdg', v: 'srn', vi: 'srndg', not: 'x' }
      return { name: names[g.gate] ?? g.gate, wires: [target!] }
    }
  }
}

function runQuantumCircuit(qubits: number, gates: CircuitGate[]): { re: number; im: number }[] {
  const qc = new QuantumCircuit(qubits)
  for (const g of gates) {
    const t = toQuantumCircuit(g)
    const params = t.params
      ? Object.fromEntries(Object.entries(t.params).map(([k, v]) => [k, String(v)]))
      : undefined
    qc.appendGate(t.name, t.wires, params ? { params } : {})
  }
  qc.run()
  return qc.stateAsSimpleArray().map((a) => ({ re: Number(a.re), im: Number(a.im) }))
}

function lcg(seed: number) {
  let s = seed
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s / 2 ** 32
  }
}

function randomCircuit(rand: () => number, qubits: number, length: number, native: boolean): CircuitGate[] {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!
  const q = () => Math.floor(rand() * qubits)
  const two = () => {
    const a = q()
    let b = q()
    while (b === a) b = q()
    return [a, b] as [number, number]
  }
  const gates: CircuitGate[] = []
  for (let k = 0; k < length; k++) {
    if (native) {
      const kind = pick(['gpi', 'gpi2', 'ms'] as const)
      if (kind === 'ms' && qubits > 1) gates.push({ gate: 'ms', targets: two(), phases: [rand(), rand()] })
      else gates.push({ gate: kind === 'ms' ? 'gpi2' : kind, target: q(), phase: rand() })
      continue
    }
    const kind = pick(['fixed', 'rotation', 'pair', 'controlled'] as const)
    if (kind === 'fixed')
      gates.push({ gate: pick(['x', 'y', 'z', 'h', 's', 'si', 't', 'ti', 'v', 'vi', 'not']), target: q() })
    else if (kind === 'rotation')
      gates.push({ gate: pick(['rx', 'ry', 'rz']), target: q(), rotation: (rand() - 0.5) * 4 * Math.PI })
    else if (qubits < 2) gates.push({ gate: 'h', target: 0 })
    else if (kind === 'pair') {
      const gate = pick(['xx', 'yy', 'zz', 'swap'])
      gates.push(
        gate === 'swap'
          ? { gate, targets: two() }
          : { gate, targets: two(), rotation: (rand() - 0.5) * 4 * Math.PI },
      )
    } else {
      const [control, target] = two()
      const gate = pick(['cnot', 'ry', 'rz', 'rx'])
      gates.push(
        gate === 'cnot'
          ? { gate, control, target }
          : { gate, control, target, rotation: (rand() - 0.5) * 4 * Math.PI },
      )
    }
  }
  if (!native && qubits >= 3) gates.push({ gate: 'x', controls: [0, 1], target: 2 })
  return gates
}

function expectSameUpToGlobalPhase(
  ours: { re: Float64Array; im: Float64Array },
  theirs: { re: number; im: number }[],
) {
  let k = 0
  for (let i = 1; i < theirs.length; i++)
    if (Math.hypot(ours.re[i]!, ours.im[i]!) > Math.hypot(ours.re[k]!, ours.im[k]!)) k = i
  // Phase factor e^{iφ} = theirs[k] / ours[k].
  const or = ours.re[k]!
  const oi = ours.im[k]!
  const n = or * or + oi * oi
  const fr = (theirs[k]!.re * or + theirs[k]!.im * oi) / n
  const fi = (theirs[k]!.im * or - theirs[k]!.re * oi) / n
  expect(Math.hypot(fr, fi)).toBeCloseTo(1, 9)
  for (let i = 0; i < theirs.length; i++) {
    expect(ours.re[i]! * fr - ours.im[i]! * fi).toBeCloseTo(theirs[i]!.re, 9)
    expect(ours.re[i]! * fi + ours.im[i]! * fr).toBeCloseTo(theirs[i]!.im, 9)
  }
}

describe('cross-check against quantum-circuit (an independent simulator from npm)', () => {
  it('agrees on 60 random qis circuits of 1 to 6 qubits (controls, xx/yy/zz, swap, rotations)', () => {
    const rand = lcg(11)
    for (let t = 0; t < 60; t++) {
      const qubits = 1 + (t % 6)
      const gates = randomCircuit(rand, qubits, 12 + (t % 10), false)
      const ours = simulateCircuit({ qubits, circuit: gates }).state
      expectSameUpToGlobalPhase(ours, runQuantumCircuit(qubits, gates))
    }
  })
  it('agrees on 30 random native circuits (gpi, gpi2, ms)', () => {
    const rand = lcg(12)
    for (let t = 0; t < 30; t++) {
      const qubits = 1 + (t % 4)
      const gates = randomCircuit(rand, qubits, 10, true)
      const ours = simulateCircuit({ qubits, gateset: 'native', circuit: gates }).state
      expectSameUpToGlobalPhase(ours, runQuantumCircuit(qubits, gates))
    }
  })
})
