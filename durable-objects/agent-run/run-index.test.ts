import { describe, expect, it } from 'vitest'
import { startedBy } from './run-index'

describe('who started a run, from its owner', () => {
  it('names the API key or the person; other subjects and ids that are no UUID name neither', () => {
    const id = '5b0c9a7e-0f3e-4a53-9a3b-1d2e3f4a5b6c'
    expect(startedBy(`key:${id}`)).toEqual({ apiKeyId: id, userId: null })
    expect(startedBy(`sub:user:${id}`)).toEqual({ apiKeyId: null, userId: id })
    expect(startedBy(`sub:sa:${id}`)).toEqual({ apiKeyId: null, userId: null })
    expect(startedBy('key:key-test')).toEqual({ apiKeyId: null, userId: null })
  })
})
