import { describe, expect, it } from 'vitest'
import { AppError } from '../../../shared/http/errors'
import { deployedBundles } from './deployed-bundles'

const digest = 'a'.repeat(64)

describe('DEPLOYED_BUNDLES', () => {
  it('unset or blank names no bundle', () => {
    expect(deployedBundles(undefined)).toBeNull()
    expect(deployedBundles('  ')).toBeNull()
  })

  it('reads the list the deploy step wrote', () => {
    expect(deployedBundles(JSON.stringify([{ worker: 'svc-chat', sha256: digest, bytes: 10 }]))).toEqual([
      { worker: 'svc-chat', sha256: digest, bytes: 10 },
    ])
  })

  it.each([
    ['not JSON', '{', /not JSON/],
    ['an empty list', '[]', /at least 1|>=1/],
    [
      'a short digest',
      JSON.stringify([{ worker: 'svc-chat', sha256: 'abc', bytes: 1 }]),
      /0\.sha256: 64 lowercase hex/,
    ],
    [
      'an unknown field',
      JSON.stringify([{ worker: 'svc-chat', sha256: digest, bytes: 1, x: 1 }]),
      /0: Unrecognized key/,
    ],
    [
      'a worker twice',
      JSON.stringify([
        { worker: 'svc-chat', sha256: digest, bytes: 1 },
        { worker: 'svc-chat', sha256: digest, bytes: 2 },
      ]),
      /each worker once/,
    ],
  ])('refuses %s with a 503 whose log line names the variable and the rule', (_name, raw, rule) => {
    let caught: unknown
    try {
      deployedBundles(raw)
    } catch (error) {
      caught = error
    }
    expect(caught).toBeInstanceOf(AppError)
    const error = caught as AppError
    expect(error.status).toBe(503)
    expect(error.code).toBe('attestation_unavailable')
    expect(error.internalMessage).toMatch(/^DEPLOYED_BUNDLES must be/)
    expect(error.internalMessage).toMatch(rule)
  })
})
