import { describe, expect, it } from 'vitest'
import { AppError } from '../http/errors'
import { openDatabase } from './client'

describe('openDatabase', () => {
  it('refuses with a 503 when DATABASE_URL is not set, naming the variable only in the internal message', () => {
    for (const env of [{}, { DATABASE_URL: '' }, { DATABASE_WS_PROXY: '127.0.0.1:1/v1' }]) {
      let error: unknown
      try {
        openDatabase(env)
      } catch (err) {
        error = err
      }
      expect(error).toBeInstanceOf(AppError)
      expect(error).toMatchObject({ status: 503, code: 'database_not_configured' })
      expect((error as AppError).message).not.toContain('DATABASE_URL')
      expect((error as AppError).internalMessage).toContain('DATABASE_URL')
    }
  })
})
