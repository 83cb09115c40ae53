import { describe, expect, it } from 'vitest'
import {
  MODEL_CATALOG,
  ModelCatalogSchema,
  renderModelList,
  resolveModel,
  supportsThinking,
} from './model-catalog'
import raw from './model-catalog.json'

describe('model catalog', () => {
  it('validates the shipped catalog', () => {
    expect(MODEL_CATALOG.models).toHaveLength(6)
  })

  it('refuses a catalog with a bad price, a missing alias or a dangling current snapshot', () => {
    const clone = () => JSON.parse(JSON.stringify(raw)) as typeof raw
    const badPrice = clone()
    badPrice.models[0]!.pricing.prompt = '$0.1'
    expect(ModelCatalogSchema.safeParse(badPrice).success).toBe(false)
    const missing = clone()
    missing.models.pop()
    expect(ModelCatalogSchema.safeParse(missing).success).toBe(false)
    const dangling = clone()
    dangling.models[0]!.current_snapshot = 'svc-cell-1999-01-01'
    expect(ModelCatalogSchema.safeParse(dangling).success).toBe(false)
  })

  it('maps every alias to a current snapshot that is listed', () => {
    const list = renderModelList()
    for (const [alias, snapshot] of Object.entries(list.aliases)) {
      expect(list.data.some((m) => m.id === snapshot && m.alias === alias)).toBe(true)
    }
  })

  it('resolves aliases and snapshots and knows which models think', () => {
    expect(resolveModel('svc-comb')?.snapshot).toBe('svc-comb-2026-10-05')
    expect(resolveModel('svc-comb-2026-04-20')?.entry.alias).toBe('svc-comb')
    expect(resolveModel('gpt-4')).toBeNull()
    expect(supportsThinking('svc-hive')).toBe(true)
    expect(supportsThinking('svc-cell')).toBe(false)
  })
})
