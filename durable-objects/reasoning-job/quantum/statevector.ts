/**
 * A statevector simulator: 2^n complex amplitudes in two Float64Arrays (real and imaginary parts),
 * gates applied in place. Basis state i holds qubit k in bit k (IonQ's order, ionq-circuit.ts).
 *
 * Bounds: a state of n qubits is 16·2^n bytes and every gate touches all of it, so a circuit costs
 * about (gates × 2^n) amplitude updates. workerd freezes the clock while code runs (timers advance
 * only across I/O), so a wall-clock deadline cannot stop a runaway simulation inside a Worker; the
 * CPU bound is therefore this work count, checked before anything runs (`SimulatorBounds`), with the
 * rate measured in docs/benchmarks.md to translate it into time.
 */
import { type IonqCircuit, parseCircuit, type ResolvedGate } from './ionq-circuit'

export interface SimulatorBounds {
  /** Largest register simulated (the state is 16·2^n bytes: 20 qubits = 16 MiB). */
  readonly maxQubits: number
  /** Most amplitude updates one run may cost (gates × 2^qubits, summed over runs of a search). */
  readonly maxWork: number
}

/** 20 qubits; 4·10^8 updates ≈ 2-4 s of one core on this machine (docs/benchmarks.md). */
export const DEFAULT_SIMULATOR_BOUNDS: SimulatorBounds = { maxQubits: 20, maxWork: 400_000_000 }

/** A run beyond the bounds: refused before any work, with what it would have cost. */
export class SimulatorLimitError extends Error {
  readonly limit: 'qubits' | 'work'
  constructor(limit: 'qubits' | 'work', message: string) {
    super(message)
    this.name = 'SimulatorLimitError'
    this.limit = limit
  }
}

export function circuitWork(qubits: number, gateCount: number): number {
  return gateCount * 2 ** qubits
}

export function checkBounds(qubits: number, work: number, bounds: SimulatorBounds): void {
  if (qubits > bounds.maxQubits) {
    throw new SimulatorLimitError(
      'qubits',
      `the circuit has ${qubits} qubits; this simulator runs at most ${bounds.maxQubits} (a state of ${qubits} qubits needs ${formatBytes(16 * 2 ** qubits)})`,
    )
  }
  if (work > bounds.maxWork) {
    throw new SimulatorLimitError(
      'work',
      `the simulation needs ${work.toExponential(2)} amplitude updates (gates × 2^qubits), more than the CPU budget of ${bounds.maxWork.toExponential(2)}; use fewer qubits, gates or evaluations`,
    )
  }
}

function formatBytes(n: number): string {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(0)} GiB`
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(0)} MiB`
  return `${(n / 1024).toFixed(0)} KiB`
}

const SQRT1_2 = Math.SQRT1_2

/** A 2×2 complex matrix, row-major: [re00, im00, re01, im01, re10, im10, re11, im11]. */
type Matrix2 = readonly [number, number, number, number, number, number, number, number]

function singleMatrix(name: string, param: number | null): Matrix2 {
  const t = param ?? 0
  const c = Math.cos(t / 2)
  const s = Math.sin(t / 2)
  switch (name) {
    case 'x':
      return [0, 0, 1, 0, 1, 0, 0, 0]
    case 'y':
      return [0, 0, 0, -1, 0, 1, 0, 0]
    case 'z':
      return [1, 0, 0, 0, 0, 0, -1, 0]
    case 'h':
      return [SQRT1_2, 0, SQRT1_2, 0, SQRT1_2, 0, -SQRT1_2, 0]
    case 's':
      return [1, 0, 0, 0, 0, 0, 0, 1]
    case 'si':
      return [1, 0, 0, 0, 0, 0, 0, -1]
    case 't':
      return [1, 0, 0, 0, 0, 0, SQRT1_2, SQRT1_2]
    case 'ti':
      return [1, 0, 0, 0, 0, 0, SQRT1_2, -SQRT1_2]
    case 'v': // √X
      return [0.5, 0.5, 0.5, -0.5, 0.5, -0.5, 0.5, 0.5]
    case 'vi':
      return [0.5, -0.5, 0.5, 0.5, 0.5, 0.5, 0.5, -0.5]
    case 'rx': // exp(-iθX/2)
      return [c, 0, 0, -s, 0, -s, c, 0]
    case 'ry':
      return [c, 0, -s, 0, s, 0, c, 0]
    case 'rz':
      return [c, -s, 0, 0, 0, 0, c, s]
    case 'gpi': // [[0, e^{-iφ}], [e^{iφ}, 0]]
      return [0, 0, Math.cos(t), -Math.sin(t), Math.cos(t), Math.sin(t), 0, 0]
    case 'gpi2': // 1/√2 [[1, -i e^{-iφ}], [-i e^{iφ}, 1]]
      return [
        SQRT1_2,
        0,
        -SQRT1_2 * Math.sin(t),
        -SQRT1_2 * Math.cos(t),
        SQRT1_2 * Math.sin(t),
        -SQRT1_2 * Math.cos(t),
        SQRT1_2,
        0,
      ]
    default:
      throw new Error(`no matrix for gate ${name}`)
  }
}

function maskOf(qubits: readonly number[]): number {
  let m = 0
  for (const q of qubits) m |= 1 << q
  return m
}

export class StateVector {
  readonly qubits: number
  readonly size: number
  readonly re: Float64Array
  readonly im: Float64Array

  /** |0…0⟩ on `qubits` qubits. */
  constructor(qubits: number) {
    this.qubits = qubits
    this.size = 2 ** qubits
    this.re = new Float64Array(this.size)
    this.im = new Float64Array(this.size)
    this.re[0] = 1
  }

  reset(): void {
    this.re.fill(0)
    this.im.fill(0)
    this.re[0] = 1
  }

  /** A 2×2 unitary on `target`, applied where every control bit is 1. */
  applyMatrix(target: number, m: Matrix2, controlMask = 0): void {
    const { re, im, size } = this
    const bit = 1 << target
    const [ar, ai, br, bi, cr, ci, dr, di] = m
    for (let i = 0; i < size; i++) {
      if (i & bit || (i & controlMask) !== controlMask) continue
      const j = i | bit
      const xr = re[i]!
      const xi = im[i]!
      const yr = re[j]!
      const yi = im[j]!
      re[i] = ar * xr - ai * xi + br * yr - bi * yi
      im[i] = ar * xi + ai * xr + br * yi + bi * yr
      re[j] = cr * xr - ci * xi + dr * yr - di * yi
      im[j] = cr * xi + ci * xr + dr * yi + di * yr
    }
  }

  /** Multiplies amplitude i by e^{-i·phase[i]}: a diagonal operator in one pass. */
  applyDiagonalPhase(phase: Float64Array, scale: number): void {
    const { re, im, size } = this
    for (let i = 0; i < size; i++) {
      const a = -scale * phase[i]!
      const c = Math.cos(a)
      const s = Math.sin(a)
      const xr = re[i]!
      const xi = im[i]!
      re[i] = xr * c - xi * s
      im[i] = xr * s + xi * c
    }
  }

  /**
   * exp(-i·θ/2·P⊗P) for P = X, Y or Z on qubits a, b; swap. Both XX and YY couple |00⟩↔|11⟩ and
   * |01⟩↔|10⟩ with cos(θ/2) on the diagonal and -i·sin(θ/2) (XX) or ±i·sin(θ/2) (YY) off it.
   */
  applyPair(name: string, a: number, b: number, theta: number, controlMask = 0): void {
    const { re, im, size } = this
    const ba = 1 << a
    const bb = 1 << b
    const both = ba | bb
    if (name === 'zz') {
      // Diagonal: e^{-iθ/2} where the bits agree, e^{+iθ/2} where they differ.
      const c = Math.cos(theta / 2)
      const s = Math.sin(theta / 2)
      for (let i = 0; i < size; i++) {
        if ((i & controlMask) !== controlMask) continue
        const differ = ((i & ba) !== 0) !== ((i & bb) !== 0)
        const sn = differ ? s : -s
        const xr = re[i]!
        const xi = im[i]!
        re[i] = xr * c - xi * sn
        im[i] = xr * sn + xi * c
      }
      return
    }
    const c = name === 'swap' ? 0 : Math.cos(theta / 2)
    const s = name === 'swap' ? 0 : Math.sin(theta / 2)
    for (let i = 0; i < size; i++) {
      if (i & both || (i & controlMask) !== controlMask) continue
      const i00 = i
      const i01 = i | bb // b set (a clear)
      const i10 = i | ba
      const i11 = i | both
      if (name === 'swap') {
        const tr = re[i01]!
        const ti = im[i01]!
        re[i01] = re[i10]!
        im[i01] = im[i10]!
        re[i10] = tr
        im[i10] = ti
        continue
      }
      // |00⟩,|11⟩ pair: off-diagonal -i·s (XX) or +i·s (YY: ⟨00|YY|11⟩ = -1).
      const sOuter = name === 'yy' ? -s : s
      let xr = re[i00]!
      let xi = im[i00]!
      let yr = re[i11]!
      let yi = im[i11]!
      re[i00] = c * xr + sOuter * yi
      im[i00] = c * xi - sOuter * yr
      re[i11] = c * yr + sOuter * xi
      im[i11] = c * yi - sOuter * xr
      // |01⟩,|10⟩ pair: -i·s for both XX and YY.
      xr = re[i01]!
      xi = im[i01]!
      yr = re[i10]!
      yi = im[i10]!
      re[i01] = c * xr + s * yi
      im[i01] = c * xi - s * yr
      re[i10] = c * yr + s * xi
      im[i10] = c * yi - s * xr
    }
  }

  /** IonQ's native MS(φ0, φ1, angle) on qubits a (φ0) and b (φ1). */
  applyMs(a: number, b: number, phi0: number, phi1: number, angle: number): void {
    const { re, im, size } = this
    const ba = 1 << a
    const bb = 1 << b
    const both = ba | bb
    const c = Math.cos(angle / 2)
    const s = Math.sin(angle / 2)
    const sum = phi0 + phi1
    const diff = phi0 - phi1
    // -i·s·e^{-iφ} = s·(-sin φ - i cos φ); the lower-left entries use e^{+iφ}.
    const uR = -s * Math.sin(sum)
    const uI = -s * Math.cos(sum)
    const lR = s * Math.sin(sum)
    const lI = -s * Math.cos(sum)
    const vR = -s * Math.sin(diff)
    const vI = -s * Math.cos(diff)
    const wR = s * Math.sin(diff)
    const wI = -s * Math.cos(diff)
    for (let i = 0; i < size; i++) {
      if (i & both) continue
      // Matrix rows in the order |a b⟩ = 00, 01, 10, 11 (a is the high bit of the matrix index).
      const i00 = i
      const i01 = i | bb
      const i10 = i | ba
      const i11 = i | both
      let xr = re[i00]!
      let xi = im[i00]!
      let yr = re[i11]!
      let yi = im[i11]!
      re[i00] = c * xr + uR * yr - uI * yi
      im[i00] = c * xi + uR * yi + uI * yr
      re[i11] = lR * xr - lI * xi + c * yr
      im[i11] = lR * xi + lI * xr + c * yi
      xr = re[i01]!
      xi = im[i01]!
      yr = re[i10]!
      yi = im[i10]!
      re[i01] = c * xr + vR * yr - vI * yi
      im[i01] = c * xi + vR * yi + vI * yr
      re[i10] = wR * xr - wI * xi + c * yr
      im[i10] = wR * xi + wI * xr + c * yi
    }
  }

  apply(gate: ResolvedGate): void {
    if (gate.kind === 'ms') {
      this.applyMs(gate.targets[0], gate.targets[1], gate.phases[0], gate.phases[1], gate.angle)
    } else if (gate.kind === 'pair') {
      this.applyPair(gate.name, gate.targets[0], gate.targets[1], gate.param ?? 0, maskOf(gate.controls))
    } else {
      this.applyMatrix(gate.target, singleMatrix(gate.name, gate.param), maskOf(gate.controls))
    }
  }

  /** |amplitude|² of every basis state. */
  probabilities(): Float64Array {
    const out = new Float64Array(this.size)
    for (let i = 0; i < this.size; i++) out[i] = this.re[i]! ** 2 + this.im[i]! ** 2
    return out
  }

  /** Σ |a_i|²·value[i]: the expectation of a diagonal observable. */
  expectation(values: Float64Array): number {
    let sum = 0
    for (let i = 0; i < this.size; i++) sum += (this.re[i]! ** 2 + this.im[i]! ** 2) * values[i]!
    return sum
  }
}

export interface SimulationResult {
  readonly qubits: number
  readonly state: StateVector
  /** Amplitude updates spent (gates × 2^qubits). */
  readonly work: number
}

/** Runs a circuit (untrusted JSON or parsed) from |0…0⟩ within the bounds. */
export function simulateCircuit(
  input: IonqCircuit | unknown,
  bounds = DEFAULT_SIMULATOR_BOUNDS,
): SimulationResult {
  const { circuit, gates } = parseCircuit(input)
  const work = circuitWork(circuit.qubits, gates.length)
  checkBounds(circuit.qubits, work, bounds)
  const state = new StateVector(circuit.qubits)
  for (const gate of gates) state.apply(gate)
  return { qubits: circuit.qubits, state, work }
}

/**
 * The provider's result format: probabilities keyed by basis-state integer (decimal strings),
 * zero entries left out, rounded to 12 significant digits as JSON carries them.
 */
export function probabilityMap(probabilities: Float64Array, epsilon = 1e-15): Record<string, number> {
  const out: Record<string, number> = {}
  for (let i = 0; i < probabilities.length; i++) {
    const p = probabilities[i]!
    if (p > epsilon) out[String(i)] = Number(p.toPrecision(12))
  }
  return out
}
