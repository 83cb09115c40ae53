import { describe, expect, it } from 'vitest'
import { runObjectName } from './run-client'

const tenantId = '00000000-0000-4000-8000-000000000001'
const runId = '00000000-0000-4000-8000-0000000000aa'

describe('runObjectName', () => {
  it('keeps the names runs had before modes were separate: a key in either mode, a person live', () => {
    expect(runObjectName({ tenantId, mode: 'test', principalId: 'key:k1' }, runId)).toBe(
      `${tenantId}/key:k1/${runId}`,
    )
    expect(runObjectName({ tenantId, mode: 'live', principalId: 'key:k2' }, runId)).toBe(
      `${tenantId}/key:k2/${runId}`,
    )
    expect(runObjectName({ tenantId, mode: 'live', principalId: 'sub:user:u' }, runId)).toBe(
      `${tenantId}/sub:user:u/${runId}`,
    )
  })

  it("names a person's test-mode run apart from its live run with the same id", () => {
    const test = runObjectName({ tenantId, mode: 'test', principalId: 'sub:user:u' }, runId)
    expect(test).toBe(`${tenantId}/test/sub:user:u/${runId}`)
    expect(test).not.toBe(runObjectName({ tenantId, mode: 'live', principalId: 'sub:user:u' }, runId))
  })
})
