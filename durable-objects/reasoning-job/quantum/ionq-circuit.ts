/**
 * The circuit wire format: IonQ's `ionq.circuit.v0` JSON (API v0.3), the one format the product's
 * simulator runs and the QPU providers receive. One definition (zod) validates what we build and
 * what a provider adapter sends. The fake IonQ reads the format on its own (test/fakes/
 * ionq-circuit.ts, from IonQ's documentation), so the two are checked against each other.
 *
 *   { "format": "ionq.circuit.v0", "gateset": "qis", "qubits": 3,
 *     "circuit": [ { "gate": "h", "target": 0 }, { "gate": "cnot", "control": 0, "target": 1 } ] }
 *
 * Gates (docs/quantum-selector.md, "Gate set"):
 * - qis, one target, optional `control` / `controls` (then controlled on all of them being 1):
 *   x not y z h s si t ti v vi (fixed), rx ry rz (`rotation`, radians: exp(-i·θ/2·P)).
 *   `cnot` is `x` with one control.
 * - qis, two targets (`targets: [a, b]`): swap, xx yy zz (`rotation`, radians: exp(-i·θ/2·P⊗P)).
 * - native (`gateset: "native"`): gpi gpi2 (`phase`, in turns), ms (`phases: [φ0, φ1]`, turns,
 *   optional `angle`, turns, default 0.25 = fully entangling), zz (`angle`, turns).
 *
 * Bit order (IonQ's): qubit k is bit k of the basis-state integer, so an `x` on qubit 0 of three
 * qubits gives state 1 (binary 001) and the result key "1". Pinned by a test.
 */
import { z } from 'zod'

export const CIRCUIT_FORMAT = 'ionq.circuit.v0'

export const QIS_FIXED_GATES = ['x', 'not', 'y', 'z', 'h', 's', 'si', 't', 'ti', 'v', 'vi', 'cnot'] as const
export const QIS_ROTATION_GATES = ['rx', 'ry', 'rz'] as const
export const QIS_TWO_QUBIT_GATES = ['swap', 'xx', 'yy', 'zz'] as const
export const QIS_GATES = [...QIS_FIXED_GATES, ...QIS_ROTATION_GATES, ...QIS_TWO_QUBIT_GATES] as const
export const NATIVE_GATES = ['gpi', 'gpi2', 'ms', 'zz'] as const

const qubitIndex = z.int().min(0)

/** One gate as sent on the wire: fields are checked against the gate by `validateCircuit`. */
export const CircuitGateSchema = z
  .object({
    gate: z.string().min(1),
    target: qubitIndex.optional(),
    targets: z.array(qubitIndex).min(1).max(2).optional(),
    control: qubitIndex.optional(),
    controls: z.array(qubitIndex).min(1).optional(),
    rotation: z.number().finite().optional(),
    phase: z.number().finite().optional(),
    phases: z.array(z.number().finite()).length(2).optional(),
    angle: z.number().finite().optional(),
  })
  .strict()
export type CircuitGate = z.infer<typeof CircuitGateSchema>

export const IonqCircuitSchema = z
  .object({
    format: z.literal(CIRCUIT_FORMAT).optional(),
    gateset: z.enum(['qis', 'native']).optional(),
    qubits: z.int().min(1),
    circuit: z.array(CircuitGateSchema),
  })
  .strict()
export type IonqCircuit = z.infer<typeof IonqCircuitSchema>

/** A circuit that does not mean anything runnable; `path` names the offending field. */
export class CircuitError extends Error {
  readonly path: string
  constructor(path: string, message: string) {
    super(`${path}: ${message}`)
    this.name = 'CircuitError'
    this.path = path
  }
}

/** A gate resolved to what the simulator applies. */
export type ResolvedGate =
  | { kind: 'single'; name: string; target: number; controls: number[]; param: number | null }
  | { kind: 'pair'; name: string; targets: [number, number]; controls: number[]; param: number | null }
  | { kind: 'ms'; targets: [number, number]; phases: [number, number]; angle: number }

function oneTarget(g: CircuitGate, path: string, qubits: number): number {
  if (g.targets !== undefined && g.target !== undefined)
    throw new CircuitError(path, `gate "${g.gate}" takes either "target" or "targets", not both`)
  const t = g.target ?? (g.targets?.length === 1 ? g.targets[0] : undefined)
  if (t === undefined) throw new CircuitError(path, `gate "${g.gate}" needs one "target"`)
  return inRange(t, `${path}.target`, qubits)
}

function twoTargets(g: CircuitGate, path: string, qubits: number): [number, number] {
  if (g.targets?.length !== 2 || g.target !== undefined)
    throw new CircuitError(path, `gate "${g.gate}" needs "targets" with two qubits`)
  const [a, b] = g.targets as [number, number]
  if (a === b)
    throw new CircuitError(`${path}.targets`, `gate "${g.gate}" needs two different qubits (got ${a} twice)`)
  return [inRange(a, `${path}.targets[0]`, qubits), inRange(b, `${path}.targets[1]`, qubits)]
}

function inRange(q: number, path: string, qubits: number): number {
  if (q >= qubits)
    throw new CircuitError(
      path,
      `qubit ${q} is out of range: the circuit declares ${qubits} qubits (0 to ${qubits - 1})`,
    )
  return q
}

function controlsOf(g: CircuitGate, path: string, qubits: number, targets: readonly number[]): number[] {
  const controls = [...(g.control === undefined ? [] : [g.control]), ...(g.controls ?? [])]
  for (const [i, c] of controls.entries()) {
    inRange(c, `${path}.controls[${i}]`, qubits)
    if (targets.includes(c))
      throw new CircuitError(`${path}.controls[${i}]`, `qubit ${c} is both a control and a target`)
  }
  if (new Set(controls).size !== controls.length)
    throw new CircuitError(`${path}.controls`, 'a qubit is listed twice')
  return controls
}

function forbid(g: CircuitGate, path: string, fields: readonly (keyof CircuitGate)[]): void {
  for (const f of fields) {
    if (g[f] !== undefined) throw new CircuitError(`${path}.${f}`, `gate "${g.gate}" takes no "${f}"`)
  }
}

function need(value: number | undefined, path: string, gate: string, field: string, unit: string): number {
  if (value === undefined) throw new CircuitError(path, `gate "${gate}" needs "${field}" (${unit})`)
  return value
}

/**
 * Checks a parsed circuit against the gate set and the qubit count, and resolves every gate.
 * Throws CircuitError naming the first offending field ("circuit[3].gate: unknown gate ...").
 */
export function resolveCircuit(circuit: IonqCircuit): ResolvedGate[] {
  const gateset = circuit.gateset ?? 'qis'
  const { qubits } = circuit
  return circuit.circuit.map((g, i) => {
    const path = `circuit[${i}]`
    if (gateset === 'native') {
      if (!(NATIVE_GATES as readonly string[]).includes(g.gate))
        throw new CircuitError(
          `${path}.gate`,
          `unknown native gate "${g.gate}" (native gates: ${NATIVE_GATES.join(', ')})`,
        )
      forbid(g, path, ['control', 'controls', 'rotation'])
      if (g.gate === 'gpi' || g.gate === 'gpi2') {
        forbid(g, path, ['phases', 'angle'])
        const target = oneTarget(g, path, qubits)
        const phase = need(g.phase, `${path}.phase`, g.gate, 'phase', 'turns')
        return { kind: 'single', name: g.gate, target, controls: [], param: 2 * Math.PI * phase }
      }
      if (g.gate === 'ms') {
        forbid(g, path, ['phase'])
        const targets = twoTargets(g, path, qubits)
        if (!g.phases)
          throw new CircuitError(`${path}.phases`, 'gate "ms" needs "phases" (two numbers, turns)')
        const angle = g.angle ?? 0.25
        if (angle < 0 || angle > 0.25)
          throw new CircuitError(
            `${path}.angle`,
            `gate "ms" takes an angle from 0 to 0.25 turns (got ${angle})`,
          )
        return {
          kind: 'ms',
          targets,
          phases: [2 * Math.PI * g.phases[0]!, 2 * Math.PI * g.phases[1]!],
          angle: 2 * Math.PI * angle,
        }
      }
      // native zz: exp(-i·π·angle·Z⊗Z) with angle in turns, i.e. qis zz with rotation 2π·angle.
      forbid(g, path, ['phase', 'phases'])
      const targets = twoTargets(g, path, qubits)
      const angle = need(g.angle, `${path}.angle`, 'zz', 'angle', 'turns')
      return { kind: 'pair', name: 'zz', targets, controls: [], param: 2 * Math.PI * angle }
    }
    if (!(QIS_GATES as readonly string[]).includes(g.gate))
      throw new CircuitError(`${path}.gate`, `unknown gate "${g.gate}" (qis gates: ${QIS_GATES.join(', ')})`)
    forbid(g, path, ['phase', 'phases', 'angle'])
    const name = g.gate === 'not' || g.gate === 'cnot' ? 'x' : g.gate
    if ((QIS_TWO_QUBIT_GATES as readonly string[]).includes(g.gate)) {
      const targets = twoTargets(g, path, qubits)
      const controls = controlsOf(g, path, qubits, targets)
      if (g.gate === 'swap') {
        forbid(g, path, ['rotation'])
        return { kind: 'pair', name, targets, controls, param: null }
      }
      const rotation = need(g.rotation, `${path}.rotation`, g.gate, 'rotation', 'radians')
      return { kind: 'pair', name, targets, controls, param: rotation }
    }
    const target = oneTarget(g, path, qubits)
    const controls = controlsOf(g, path, qubits, [target])
    if (g.gate === 'cnot' && controls.length === 0)
      throw new CircuitError(`${path}.control`, 'gate "cnot" needs a "control"')
    if ((QIS_ROTATION_GATES as readonly string[]).includes(g.gate)) {
      const rotation = need(g.rotation, `${path}.rotation`, g.gate, 'rotation', 'radians')
      return { kind: 'single', name, target, controls, param: rotation }
    }
    forbid(g, path, ['rotation'])
    return { kind: 'single', name, target, controls, param: null }
  })
}

/** Parses and resolves untrusted JSON; throws CircuitError with the zod issue's path. */
export function parseCircuit(input: unknown): { circuit: IonqCircuit; gates: ResolvedGate[] } {
  const parsed = IonqCircuitSchema.safeParse(input)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!
    throw new CircuitError(issue.path.length ? issue.path.join('.') : 'input', issue.message)
  }
  return { circuit: parsed.data, gates: resolveCircuit(parsed.data) }
}
