/** The six public model aliases (spec 000). Snapshots and features live in the model catalog. */
export const MODEL_ALIASES = [
  'svc-cell',
  'svc-brood',
  'svc-comb',
  'svc-buzz',
  'svc-hive',
  'svc-swarm',
] as const
export type ModelAlias = (typeof MODEL_ALIASES)[number]

export function isModelAlias(value: string): value is ModelAlias {
  return (MODEL_ALIASES as readonly string[]).includes(value)
}
