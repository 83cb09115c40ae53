/**
 * The fake IonQ's reading of `ionq.circuit.v0` and its simulation, independent of the product:
 * the validation is written from IonQ's public API documentation ("Writing quantum programs",
 * "Native gates"), and the statevector comes from `quantum-circuit` (quantastica, a devDependency),
 * never from durable-objects/reasoning-job/quantum/. A product that encodes a circuit wrongly then gets the wrong answer
 * from this fake, as it would from IonQ.
 *
 * What IonQ documents, and this file accepts:
 * - `{format?: "ionq.circuit.v0", gateset?: "qis" | "native", qubits, circuit: [gate…]}`.
 * - qis: x y z h s si t ti v vi rx ry rz (one `target`), swap xx yy zz (`targets: [a, b]`), `not` and
 *   `cnot` as aliases of x; "their controlled and multi-controlled variants" through `control` or
 *   `controls`; rx ry rz xx yy zz take `rotation` in radians (rx = exp(-i·θ/2·X), xx = exp(-i·θ/2·X⊗X)).
 * - native: gpi gpi2 (`phase`), ms (`phases: [φ0, φ1]`, optional `angle`, 0 to 0.25, default 0.25 =
 *   fully entangling), zz (`angle`); every parameter in turns; no controls.
 * - Qubit k is bit k of the basis state's index: an x on qubit 0 reads as "1".
 *
 * quantum-circuit has singly-controlled versions of most gates and a Toffoli. Gates with more
 * controls compute the AND of their controls into extra qubits (Toffolis), apply the
 * singly-controlled gate and uncompute; those qubits end in |0⟩ and are dropped from the result.
 */
import QuantumCircuit from 'quantum-circuit'

/** An `input` that IonQ would refuse with 400; `field` names what was wrong (`circuit[3].gate`). */
export class IonqInputError extends Error {
  readonly field: string
  constructor(field: string, message: string) {
    super(`input.${field}: ${message}`)
    this.field = field
  }
}

/** One operation on quantum-circuit: its gate name, wires (controls first) and parameters (radians). */
interface Op {
  readonly name: string
  readonly wires: readonly number[]
  readonly params?: Readonly<Record<string, number>>
}

export interface ReadCircuit {
  readonly qubits: number
  /** Gates as IonQ counts them for `gate_counts`: 1q without controls, 2q otherwise. */
  readonly gateCounts: { '1q': number; '2q': number }
  /** Qubits beyond `qubits` that multi-controlled gates need. */
  readonly ancillas: number
  /** Each gate as a sequence on controls (none, one) and targets, before controls are wired. */
  readonly gates: readonly {
    readonly controls: readonly number[]
    readonly ops: (control: number | null) => Op[]
  }[]
}

const QIS_ONE_TARGET = ['x', 'not', 'cnot', 'y', 'z', 'h', 's', 'si', 't', 'ti', 'v', 'vi', 'rx', 'ry', 'rz']
const QIS_TWO_TARGETS = ['swap', 'xx', 'yy', 'zz']
const NATIVE = ['gpi', 'gpi2', 'ms', 'zz']
const FIELDS = ['gate', 'target', 'targets', 'control', 'controls', 'rotation', 'phase', 'phases', 'angle']
const TURN = 2 * Math.PI

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

/** Uncontrolled and singly-controlled forms of the fixed qis gates on quantum-circuit. */
const FIXED: Record<string, { plain: string; controlled: string[] }> = {
  x: { plain: 'x', controlled: ['cx'] },
  y: { plain: 'y', controlled: ['cy'] },
  z: { plain: 'z', controlled: ['cz'] },
  h: { plain: 'h', controlled: ['ch'] },
  s: { plain: 's', controlled: ['cs'] },
  si: { plain: 'sdg', controlled: ['csdg'] },
  t: { plain: 't', controlled: ['ct'] },
  ti: { plain: 'tdg', controlled: ['ctdg'] },
  v: { plain: 'srn', controlled: ['csrn'] },
  // v† = v³ = X·v (v² = X): a controlled X, then a controlled v.
  vi: { plain: 'srndg', controlled: ['cx', 'csrn'] },
}

/** exp(-i·θ/2·Z⊗Z) = CNOT(a→b) · Rz_b(θ) · CNOT(a→b): only the Rz needs the control. */
function controlledZz(control: number, a: number, b: number, theta: number): Op[] {
  return [
    { name: 'cx', wires: [a, b] },
    { name: 'crz', wires: [control, b], params: { phi: theta } },
    { name: 'cx', wires: [a, b] },
  ]
}

function qisGate(g: Record<string, unknown>, field: string, qubits: number) {
  const name = g.gate as string
  const twoTargets = QIS_TWO_TARGETS.includes(name)
  if (!twoTargets && !QIS_ONE_TARGET.includes(name))
    throw new IonqInputError(
      `${field}.gate`,
      `unknown gate "${name}" (qis gates: ${[...QIS_ONE_TARGET, ...QIS_TWO_TARGETS].join(', ')})`,
    )
  for (const f of ['phase', 'phases', 'angle'])
    if (g[f] !== undefined) throw new IonqInputError(`${field}.${f}`, `"${f}" belongs to native gates`)
  const targets = twoTargets ? pair(g, field, qubits) : [single(g, field, qubits)]
  const controls = controlsOf(g, field, qubits, targets)
  if (name === 'cnot' && controls.length === 0)
    throw new IonqInputError(`${field}.control`, 'gate "cnot" needs a "control" or "controls"')
  const rotating = ['rx', 'ry', 'rz', 'xx', 'yy', 'zz'].includes(name)
  const rotation = rotating ? angleOf(g, 'rotation', field, name, 'radians') : 0
  if (!rotating && g.rotation !== undefined)
    throw new IonqInputError(`${field}.rotation`, `gate "${name}" takes no "rotation"`)
  const [a, b] = targets as [number, number]
  const ops = (c: number | null): Op[] => {
    const base = name === 'not' || name === 'cnot' ? 'x' : name
    if (base === 'rx' || base === 'ry')
      return [
        {
          name: c === null ? base : `c${base}`,
          wires: c === null ? [a] : [c, a],
          params: { theta: rotation },
        },
      ]
    if (base === 'rz')
      return [
        { name: c === null ? 'rz' : 'crz', wires: c === null ? [a] : [c, a], params: { phi: rotation } },
      ]
    if (base === 'swap')
      return [{ name: c === null ? 'swap' : 'cswap', wires: c === null ? [a, b] : [c, a, b] }]
    // quantum-circuit's xx and yy are exp(-i·θ·P⊗P), its zz exp(-i·θ/2·Z⊗Z).
    if (c === null && (base === 'xx' || base === 'yy'))
      return [{ name: base, wires: [a, b], params: { theta: rotation / 2 } }]
    if (c === null && base === 'zz') return [{ name: 'zz', wires: [a, b], params: { theta: rotation } }]
    if (c !== null && base === 'zz') return controlledZz(c, a, b, rotation)
    // X⊗X = (H⊗H)(Z⊗Z)(H⊗H); Y⊗Y = (SH⊗SH)(Z⊗Z)(SH⊗SH)†.
    if (c !== null && base === 'xx') {
      const h = [a, b].map((q) => ({ name: 'h', wires: [q] }))
      return [...h, ...controlledZz(c, a, b, rotation), ...h]
    }
    if (c !== null && base === 'yy') {
      const into = [a, b].flatMap((q) => [
        { name: 'sdg', wires: [q] },
        { name: 'h', wires: [q] },
      ])
      const back = [a, b].flatMap((q) => [
        { name: 'h', wires: [q] },
        { name: 's', wires: [q] },
      ])
      return [...into, ...controlledZz(c, a, b, rotation), ...back]
    }
    const fixed = FIXED[base]!
    if (c === null) return [{ name: fixed.plain, wires: [a] }]
    return fixed.controlled.map((n) => ({ name: n, wires: [c, a] }))
  }
  return { controls, ops, arity: targets.length + controls.length }
}

function nativeGate(g: Record<string, unknown>, field: string, qubits: number) {
  const name = g.gate as string
  if (!NATIVE.includes(name))
    throw new IonqInputError(
      `${field}.gate`,
      `unknown native gate "${name}" (native gates: ${NATIVE.join(', ')})`,
    )
  for (const f of ['control', 'controls', 'rotation'])
    if (g[f] !== undefined) throw new IonqInputError(`${field}.${f}`, `native gates take no "${f}"`)
  if (name === 'gpi' || name === 'gpi2') {
    for (const f of ['phases', 'angle'])
      if (g[f] !== undefined) throw new IonqInputError(`${field}.${f}`, `gate "${name}" takes no "${f}"`)
    const target = single(g, field, qubits)
    const phase = angleOf(g, 'phase', field, name, 'turns')
    return {
      controls: [],
      ops: (): Op[] => [{ name, wires: [target], params: { phi: TURN * phase } }],
      arity: 1,
    }
  }
  const [a, b] = pair(g, field, qubits)
  if (name === 'zz') {
    for (const f of ['phase', 'phases'])
      if (g[f] !== undefined) throw new IonqInputError(`${field}.${f}`, `gate "zz" takes no "${f}"`)
    // exp(-i·π·angle·Z⊗Z): quantum-circuit's zz with θ = 2π·angle.
    const theta = TURN * angleOf(g, 'angle', field, name, 'turns')
    return { controls: [], ops: (): Op[] => [{ name: 'zz', wires: [a, b], params: { theta } }], arity: 2 }
  }
  if (g.phase !== undefined)
    throw new IonqInputError(`${field}.phase`, 'gate "ms" takes "phases", not "phase"')
  const phases = g.phases
  if (!Array.isArray(phases) || phases.length !== 2 || !phases.every((p) => Number.isFinite(p)))
    throw new IonqInputError(`${field}.phases`, 'gate "ms" needs "phases": two numbers, in turns')
  const angle = g.angle === undefined ? 0.25 : angleOf(g, 'angle', field, name, 'turns')
  if (angle < 0 || angle > 0.25)
    throw new IonqInputError(`${field}.angle`, `gate "ms" takes an angle from 0 to 0.25 turns (got ${angle})`)
  const [p0, p1] = [TURN * (phases[0] as number), TURN * (phases[1] as number)]
  const ops = (): Op[] =>
    angle === 0.25
      ? [{ name: 'ms', wires: [a, b], params: { phi0: p0, phi1: p1 } }]
      : // exp(-i·π·angle·σ(φ0)⊗σ(φ1)) with σ(φ) = Rz(φ)·X·Rz(-φ): an xx between phase rotations.
        [
          { name: 'rz', wires: [a], params: { phi: -p0 } },
          { name: 'rz', wires: [b], params: { phi: -p1 } },
          { name: 'xx', wires: [a, b], params: { theta: Math.PI * angle } },
          { name: 'rz', wires: [a], params: { phi: p0 } },
          { name: 'rz', wires: [b], params: { phi: p1 } },
        ]
  return { controls: [], ops, arity: 2 }
}

function qubitAt(value: unknown, field: string, qubits: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
    throw new IonqInputError(field, `a qubit is a non-negative integer (got ${JSON.stringify(value)})`)
  if (value >= qubits)
    throw new IonqInputError(
      field,
      `qubit ${value} is out of range: the circuit has ${qubits} qubits (0 to ${qubits - 1})`,
    )
  return value
}

function single(g: Record<string, unknown>, field: string, qubits: number): number {
  if (g.targets !== undefined)
    throw new IonqInputError(`${field}.targets`, `gate "${g.gate}" takes one "target"`)
  if (g.target === undefined) throw new IonqInputError(`${field}.target`, `gate "${g.gate}" needs a "target"`)
  return qubitAt(g.target, `${field}.target`, qubits)
}

function pair(g: Record<string, unknown>, field: string, qubits: number): [number, number] {
  const t = g.targets
  if (g.target !== undefined || !Array.isArray(t) || t.length !== 2)
    throw new IonqInputError(`${field}.targets`, `gate "${g.gate}" needs "targets" with two qubits`)
  const a = qubitAt(t[0], `${field}.targets[0]`, qubits)
  const b = qubitAt(t[1], `${field}.targets[1]`, qubits)
  if (a === b) throw new IonqInputError(`${field}.targets`, `gate "${g.gate}" needs two different qubits`)
  return [a, b]
}

function controlsOf(g: Record<string, unknown>, field: string, qubits: number, targets: number[]): number[] {
  if (g.controls !== undefined && (!Array.isArray(g.controls) || g.controls.length === 0))
    throw new IonqInputError(`${field}.controls`, '"controls" is a non-empty array of qubits')
  const listed = [
    ...(g.control === undefined ? [] : [[g.control, `${field}.control`] as const]),
    ...((g.controls as unknown[] | undefined) ?? []).map((c, i) => [c, `${field}.controls[${i}]`] as const),
  ]
  const controls = listed.map(([c, f]) => qubitAt(c, f, qubits))
  for (const [i, c] of controls.entries()) {
    if (targets.includes(c))
      throw new IonqInputError(listed[i]![1], `qubit ${c} is both a control and a target`)
    if (controls.indexOf(c) !== i) throw new IonqInputError(listed[i]![1], `qubit ${c} is listed twice`)
  }
  return controls
}

function angleOf(g: Record<string, unknown>, key: string, field: string, gate: string, unit: string): number {
  const v = g[key]
  if (v === undefined) throw new IonqInputError(`${field}.${key}`, `gate "${gate}" needs "${key}" (${unit})`)
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw new IonqInputError(`${field}.${key}`, `"${key}" must be a number (${unit})`)
  return v
}

/** Reads a job's `input` as IonQ would, or throws IonqInputError naming the field. */
export function readCircuit(input: unknown): ReadCircuit {
  if (!isObject(input)) throw new IonqInputError('input', 'must be an ionq.circuit.v0 object')
  for (const key of Object.keys(input))
    if (!['format', 'gateset', 'qubits', 'circuit'].includes(key))
      throw new IonqInputError(key, 'is not a field of ionq.circuit.v0')
  if (input.format !== undefined && input.format !== 'ionq.circuit.v0')
    throw new IonqInputError('format', `must be "ionq.circuit.v0" (got ${JSON.stringify(input.format)})`)
  const gateset = input.gateset ?? 'qis'
  if (gateset !== 'qis' && gateset !== 'native')
    throw new IonqInputError('gateset', `must be "qis" or "native" (got ${JSON.stringify(gateset)})`)
  const { qubits } = input
  if (typeof qubits !== 'number' || !Number.isInteger(qubits) || qubits < 1)
    throw new IonqInputError('qubits', `must be a positive integer (got ${JSON.stringify(qubits)})`)
  if (!Array.isArray(input.circuit)) throw new IonqInputError('circuit', 'must be an array of gates')
  const gateCounts = { '1q': 0, '2q': 0 }
  let ancillas = 0
  const gates = input.circuit.map((g: unknown, i) => {
    const field = `circuit[${i}]`
    if (!isObject(g) || typeof g.gate !== 'string')
      throw new IonqInputError(`${field}.gate`, 'every gate names its "gate"')
    for (const key of Object.keys(g))
      if (!FIELDS.includes(key)) throw new IonqInputError(`${field}.${key}`, `is not a field of a gate`)
    const read = gateset === 'native' ? nativeGate(g, field, qubits) : qisGate(g, field, qubits)
    gateCounts[read.arity === 1 ? '1q' : '2q']++
    ancillas = Math.max(ancillas, read.controls.length - 1)
    return { controls: read.controls, ops: read.ops }
  })
  return { qubits, gateCounts, ancillas, gates }
}

/** Largest register (circuit and ancillas) this fake simulates; IonQ's simulator goes further. */
export const FAKE_SIMULATOR_MAX_QUBITS = 20

/** A circuit the fake cannot simulate (the job then fails, as a real simulator's would). */
export class FakeSimulatorLimit extends Error {}

/** quantum-circuit's operations for a read circuit, multi-controlled gates wired through ancillas. */
function operations(circuit: ReadCircuit): Op[] {
  const out: Op[] = []
  for (const gate of circuit.gates) {
    const { controls } = gate
    if (controls.length <= 1) {
      out.push(...gate.ops(controls[0] ?? null))
      continue
    }
    // ancilla j = controls[0..j+1] all 1, built by Toffolis and taken apart in reverse.
    const and: Op[] = []
    for (let j = 0; j < controls.length - 1; j++) {
      const left = j === 0 ? controls[0]! : circuit.qubits + j - 1
      and.push({ name: 'ccx', wires: [left, controls[j + 1]!, circuit.qubits + j] })
    }
    out.push(...and, ...gate.ops(circuit.qubits + controls.length - 2), ...and.reverse())
  }
  return out
}

/** The exact probability of each basis state of the circuit's qubits (length 2^qubits). */
export function simulate(circuit: ReadCircuit): Float64Array {
  const width = circuit.qubits + circuit.ancillas
  if (width > FAKE_SIMULATOR_MAX_QUBITS)
    throw new FakeSimulatorLimit(
      `The circuit needs ${width} qubits to simulate; this simulator runs at most ${FAKE_SIMULATOR_MAX_QUBITS}.`,
    )
  const qc = new QuantumCircuit(width)
  for (const op of operations(circuit)) {
    const params = op.params && Object.fromEntries(Object.entries(op.params).map(([k, v]) => [k, String(v)]))
    qc.appendGate(op.name, [...op.wires], params ? { params } : {})
  }
  qc.run()
  const amplitudes = qc.stateAsSimpleArray()
  // The ancillas end in |0⟩: the circuit's states are the first 2^qubits.
  const probabilities = new Float64Array(2 ** circuit.qubits)
  for (let i = 0; i < probabilities.length; i++) {
    const { re, im } = amplitudes[i]!
    probabilities[i] = Number(re) ** 2 + Number(im) ** 2
  }
  return probabilities
}
