/**
 * The part of the `quantum-circuit` devDependency (an independent simulator, never bundled) that
 * tests and benchmarks use: the fake IonQ provider's simulation (test/fakes/ionq-circuit.ts), the product
 * simulator's cross-check (durable-objects/reasoning-job/quantum/statevector.cross-check.test.ts) and bench/quantum-simulator.ts.
 */
declare module 'quantum-circuit' {
  export default class QuantumCircuit {
    constructor(qubits: number)
    appendGate(name: string, wires: number[], options?: { params?: Record<string, string> }): void
    run(): void
    stateAsSimpleArray(): { re: number; im: number }[]
  }
}
