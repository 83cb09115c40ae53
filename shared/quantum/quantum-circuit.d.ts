/** The part of the `quantum-circuit` devDependency that the cross-check test uses (tests only). */
declare module 'quantum-circuit' {
  export default class QuantumCircuit {
    constructor(qubits: number)
    appendGate(name: string, wires: number[], options?: { params?: Record<string, string> }): void
    run(): void
    stateAsSimpleArray(): { re: number; im: number }[]
  }
}
