import { describe, expect, it } from 'vitest'
import { AppError, appErrorData, reviveAppError, toAppError } from './errors'

describe('AppError', () => {
  it('renders the OpenAI error shape with the request id', async () => {
    const res = new AppError(400, 'invalid_temperature', 'temperature must be between 0 and 2 (got 3.5)', {
      param: 'temperature',
    }).toResponse('req_1')
    expect(res.status).toBe(400)
    expect(res.headers.get('x-request-id')).toBe('req_1')
    expect(await res.json()).toEqual({
      error: {
        message: 'temperature must be between 0 and 2 (got 3.5)',
        type: 'invalid_request_error',
        param: 'temperature',
        code: 'invalid_temperature',
      },
    })
  })

  it('never leaks the internal message of an unknown error', async () => {
    const res = toAppError(new Error('connection to 10.0.0.3 refused')).toResponse()
    expect(res.status).toBe(500)
    expect(await res.text()).not.toContain('10.0.0.3')
  })

  it('renders the same response as plain values for the RPC: names lower-cased, content type its own', () => {
    const plain = new AppError(429, 'rate_limited', 'Slow down.', {
      headers: { 'Retry-After': '3', 'content-type': 'text/plain' },
    }).toPlain('req_2')
    expect(plain).toEqual({
      status: 429,
      headers: { 'retry-after': '3', 'content-type': 'application/json', 'x-request-id': 'req_2' },
      body: JSON.stringify({
        error: { message: 'Slow down.', type: 'rate_limit_error', param: null, code: 'rate_limited' },
      }),
    })
  })
})

describe('AppError across RPC', () => {
  it('crosses as structured-cloneable data and revives as the same public error, internal detail left behind', () => {
    const original = new AppError(429, 'reasoning_queue_full', 'Too many queued jobs; retry later.', {
      param: 'model',
      headers: { 'retry-after': '7' },
      extraBody: { svc_upgrade: { reason: 'queue_limit', plan: 'team' } },
      internalMessage: 'queue 12/12',
    })
    const data = structuredClone(appErrorData(original))
    expect(JSON.stringify(data)).not.toContain('queue 12/12')
    const revived = reviveAppError(data)
    expect(revived).toBeInstanceOf(AppError)
    expect(revived.internalMessage).toBeUndefined()
    expect(revived.toPlain('req-1')).toEqual(original.toPlain('req-1'))
  })
})
