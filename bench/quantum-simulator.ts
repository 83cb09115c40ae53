/**
 * The quantum selector's simulator (durable-objects/reasoning-job/quantum/): time per QAOA expectation evaluation (the
 * inner loop of the angle search, p = 3, XY ring mixer) and per measured shot, at 8, 12, 16 and
 * 20 qubits, beside
 * - the memory-bandwidth bound of the same work: bytes the evaluation must touch (every pass reads
 *   and writes both 8-byte Float64Arrays of 2^n amplitudes) divided by the bandwidth this process
 *   measures on a streaming Float64Array pass of the same size (a JS floor, not the DRAM peak);
 * - the same selection circuit run gate by gate by our simulator and by `quantum-circuit` (the
 *   npm simulator the cross-check test uses), per full circuit run.
 * Node's V8 (the engine workerd embeds), one thread, each figure the median of a few runs. States
 * up to 16 qubits (1 MiB) live in the CPU caches, so their bound is a cache bandwidth; 20 qubits
 * (16 MiB) goes to memory.
 *
 *   npx tsx bench/quantum-simulator.ts            # QUBITS=8,12,16,20 NPM_MAX_QUBITS=16
 */
import QuantumCircuit from 'quantum-circuit'
import type { CircuitGate } from '../durable-objects/reasoning-job/quantum/ionq-circuit.ts'
import { QaoaEvaluator, ringPairs, selectionCircuit } from '../durable-objects/reasoning-job/quantum/qaoa.ts'
import {
  cumulative,
  SeededRandom,
  sampleIndex,
} from '../durable-objects/reasoning-job/quantum/shot-sampler.ts'
import { simulateCircuit } from '../durable-objects/reasoning-job/quantum/statevector.ts'
import { median } from './bench-support.ts'

const QUBITS = (process.env.QUBITS ?? '8,12,16,20').split(',').map(Number)
const NPM_MAX_QUBITS = Number(process.env.NPM_MAX_QUBITS ?? 16)
const LAYERS = 3
const BIG = { maxQubits: 24, maxWork: 1e12 }

function time<T>(f: () => T): { ms: number; value: T } {
  const t = performance.now()
  const value = f()
  return { ms: performance.now() - t, value }
}

function runs(n: number, f: () => void): number {
  f() // warm-up (JIT)
  return median(Array.from({ length: n }, () => time(f).ms))
}

/** GB/s of a streaming pass touching re and im (read + write each): 32 bytes per amplitude. */
function bandwidth(size: number): number {
  const re = new Float64Array(size).fill(0.5)
  const im = new Float64Array(size).fill(0.25)
  const pass = () => {
    const c = Math.cos(0.1)
    const s = Math.sin(0.1)
    for (let i = 0; i < size; i++) {
      const x = re[i]!
      const y = im[i]!
      re[i] = x * c - y * s
      im[i] = x * s + y * c
    }
  }
  // Small states are timed over repeated passes (at least 2^22 amplitudes per sample).
  const repeat = Math.max(1, 2 ** 22 / size)
  const ms = runs(5, () => {
    for (let r = 0; r < repeat; r++) pass()
  })
  return (32 * size * repeat) / (ms / 1000) / 1e9
}

function toQuantumCircuit(qubits: number, gates: CircuitGate[]): QuantumCircuit {
  const qc = new QuantumCircuit(qubits)
  for (const g of gates) {
    if (g.gate === 'x') qc.appendGate('x', [g.target!], {})
    else if (g.gate === 'ry' && g.control !== undefined)
      qc.appendGate('cry', [g.control, g.target!], { params: { theta: String(g.rotation) } })
    else if (g.gate === 'cnot') qc.appendGate('cx', [g.control!, g.target!], {})
    else if (g.gate === 'rz') qc.appendGate('rz', [g.target!], { params: { phi: String(g.rotation) } })
    else if (g.gate === 'xx' || g.gate === 'yy')
      qc.appendGate(g.gate, g.targets!, { params: { theta: String(g.rotation! / 2) } })
    else throw new Error(`no mapping for ${g.gate}`)
  }
  return qc
}

const rows: string[] = []
for (const n of QUBITS) {
  const scores = Array.from({ length: n }, (_, i) => ((i * 7919) % n) / n)
  const angles = { gammas: [0.4, 0.8, 1.2], betas: [0.9, 0.6, 0.3] }
  const evaluator = new QaoaEvaluator(scores, 'xy-ring', BIG)
  const evalMs = runs(n >= 20 ? 3 : 7, () => evaluator.expectation(angles))
  // Passes per evaluation: initial copy + per layer (diagonal + one per ring pair) + the expectation.
  const passes = 1 + LAYERS * (1 + ringPairs(n).length) + 1
  const bytes = passes * 32 * 2 ** n
  const gbs = bandwidth(2 ** n)
  const boundMs = (bytes / (gbs * 1e9)) * 1000
  // Shots: one pass to build the CDF, then a binary search per shot.
  const probs = evaluator.prepare(angles).probabilities()
  const cdfMs = runs(5, () => cumulative(probs))
  const cdf = cumulative(probs)
  const rng = SeededRandom.fromNumber(1)
  const SHOTS = 100_000
  const shotUs =
    (runs(5, () => {
      for (let s = 0; s < SHOTS; s++) sampleIndex(cdf, rng.nextDouble())
    }) *
      1000) /
    SHOTS
  // The same selection circuit, gate by gate: ours and quantum-circuit's.
  const circuit = selectionCircuit(scores, angles)
  const oursMs = runs(n >= 20 ? 2 : 5, () => simulateCircuit(circuit, BIG))
  let npm = 'not run'
  if (n <= NPM_MAX_QUBITS) {
    const ms = median(
      Array.from({ length: 2 }, () => {
        const qc = toQuantumCircuit(n, circuit.circuit)
        return time(() => qc.run()).ms
      }),
    )
    npm = `${ms.toFixed(1)} ms`
  }
  rows.push(
    `| ${n} | ${circuit.circuit.length} | ${evalMs.toFixed(2)} ms | ${boundMs.toFixed(2)} ms (${(bytes / 2 ** 20).toFixed(1)} MiB at ${gbs.toFixed(1)} GB/s) | ${(evalMs / boundMs).toFixed(1)}× | ${cdfMs.toFixed(2)} ms + ${shotUs.toFixed(3)} µs/shot | ${oursMs.toFixed(1)} ms | ${npm} |`,
  )
  console.error(`n=${n} done`)
}
console.log(
  '| qubits | gates | QAOA evaluation (p=3) | bandwidth bound | ratio | shots: CDF pass + per shot | circuit, ours | circuit, quantum-circuit |',
)
console.log('|---|---|---|---|---|---|---|---|')
for (const r of rows) console.log(r)
