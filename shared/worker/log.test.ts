import { afterEach, describe, expect, it, vi } from 'vitest'
import { AppError } from '../http/errors'
import { errorFields, log, logServerError } from './log'

afterEach(() => vi.restoreAllMocks())

function capture() {
  const out = vi.spyOn(console, 'log').mockImplementation(() => {})
  const err = vi.spyOn(console, 'error').mockImplementation(() => {})
  const lines = (spy: typeof out) => spy.mock.calls.map((c) => String(c[0]))
  return { stdout: () => lines(out), stderr: () => lines(err) }
}

describe('log', () => {
  it('writes one JSON line with level and event first; warnings and errors to stderr', () => {
    const { stdout, stderr } = capture()
    log('info', 'qpu_job_adopted', { job_id: 'j1' })
    log('warn', 'usage_checkpoint_failed', { request_id: 'req-1', detail: 'down' })
    log('error', 'audit_append_failed', { kind: 'api_key.created', detail: undefined })
    expect(stdout()).toEqual(['{"level":"info","event":"qpu_job_adopted","job_id":"j1"}'])
    expect(stderr()).toEqual([
      '{"level":"warn","event":"usage_checkpoint_failed","request_id":"req-1","detail":"down"}',
      '{"level":"error","event":"audit_append_failed","kind":"api_key.created"}',
    ])
  })

  it('describes an AppError by code, status and internal detail with its causes, any other error by its message chain', () => {
    const dbDown = new Error('connect ECONNREFUSED\n    at socket', { cause: new Error('no route') })
    const app = new AppError(503, 'database_unavailable', 'Retry shortly.', {
      internalMessage: 'pool exhausted',
      cause: dbDown,
    })
    expect(errorFields(app)).toEqual({
      code: 'database_unavailable',
      status: 503,
      detail: 'pool exhausted <- connect ECONNREFUSED <- no route',
    })
    expect(errorFields(dbDown)).toEqual({ detail: 'connect ECONNREFUSED <- no route' })
    expect(errorFields('plain')).toEqual({ detail: 'plain' })
  })

  it('logs a 5xx AppError as server_error and leaves a 4xx to the client', () => {
    const { stderr } = capture()
    logServerError(new AppError(400, 'invalid_request', 'k must be <= 100 (got 500)'), { request_id: 'r1' })
    logServerError(new AppError(500, 'internal_error', 'Retry.', { internalMessage: 'bug' }), {
      request_id: 'r2',
    })
    expect(stderr()).toEqual([
      '{"level":"error","event":"server_error","request_id":"r2","code":"internal_error","status":500,"detail":"bug"}',
    ])
  })
})
