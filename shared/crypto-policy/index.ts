/** The crypto policy: algorithm registry, policy schema and presets, per-algorithm checks. */

export * from './enforcement'
export * from './policy'
export * from './registry'
export * from './token-algorithms'
