import { describe, expect, it } from 'vitest'
import { AppError } from '../../shared/http/errors'
import { isTransient } from './turn-loop'

describe('failures', () => {
  it('retries only what may pass later', () => {
    expect(isTransient(new AppError(502, 'upstream_unavailable', 'x'))).toBe(true)
    expect(isTransient(new AppError(429, 'rate_limited', 'x'))).toBe(true)
    expect(isTransient(new AppError(503, 'provider_not_configured', 'x'))).toBe(false)
    expect(isTransient(new AppError(400, 'upstream_rejected_request', 'x'))).toBe(false)
  })
})
