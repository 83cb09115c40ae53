import { describe, expect, it } from 'vitest'
import { AppError } from '../http/errors'
import { decodePageCursor, encodePageCursor } from './page-cursor'

describe('page cursor', () => {
  const key = { createdAt: '2026-12-07 23:34:57.123456+00', id: '0b8f6c1e-4a1d-4f4e-9c38-5d2f7a9b1c0d' }

  it('round-trips the key as unpadded base64url', () => {
    const cursor = encodePageCursor(key)
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/)
    expect(decodePageCursor(cursor, 'after')).toEqual(key)
  })

  it('answers anything it did not write with a 400 naming the parameter', () => {
    const other = (text: string) => btoa(text).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '')
    for (const bad of [
      'not a cursor',
      `${encodePageCursor(key)}==`,
      other(`${key.createdAt}|not-a-uuid`),
      other(`yesterday|${key.id}`),
      other(`${key.createdAt}|${key.id}|extra`),
    ]) {
      let caught: unknown
      try {
        decodePageCursor(bad, 'after')
      } catch (err) {
        caught = err
      }
      expect(caught, bad).toBeInstanceOf(AppError)
      expect((caught as AppError).status).toBe(400)
      expect((caught as AppError).param).toBe('after')
    }
  })
})
