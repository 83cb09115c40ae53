import { describe, expect, it } from 'vitest'
import { AppError } from '../../shared/http/errors'
import {
  fetchProviderJson,
  firstAnswer,
  ProviderError,
  type ProviderFailure,
  withDeadline,
} from './provider-chain'

const failure: ProviderFailure = (provider, kind, detail, status) =>
  new ProviderError(provider, kind, detail, status)

/** Rejects when its signal aborts (as fetch does, also when it already has): a provider that never answers on its own. */
const hang = (signal: AbortSignal) =>
  new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason)
    signal.addEventListener('abort', () => reject(signal.reason))
  })

describe('withDeadline', () => {
  it('aborts the call and rejects with the timeout when the deadline passes', async () => {
    let seen: AbortSignal | undefined
    const timeout = new Error('too slow')
    const call = withDeadline(
      (signal) => {
        seen = signal
        return hang(signal)
      },
      20,
      timeout,
    )
    await expect(call).rejects.toBe(timeout)
    expect(seen?.aborted).toBe(true)
    expect(seen?.reason).toBe(timeout)
  })

  it("follows the caller's abort with its reason, and lets go of the caller's signal after", async () => {
    const outer = new AbortController()
    let seen: AbortSignal | undefined
    const call = withDeadline(
      (signal) => {
        seen = signal
        return hang(signal)
      },
      5_000,
      new Error('late'),
      outer.signal,
    )
    const gone = new Error('client went away')
    outer.abort(gone)
    await expect(call).rejects.toBe(gone)
    expect(seen?.reason).toBe(gone)
  })

  it('returns the answer and clears its timer', async () => {
    expect(await withDeadline(async () => 42, 10, new Error('x'))).toBe(42)
  })
})

describe('firstAnswer', () => {
  const options = { timeoutMs: 30, failure, code: 'things_failed', what: 'thing provider' }

  it('returns the first provider that answers, after the ones that failed', async () => {
    const tried: string[] = []
    const result = await firstAnswer(
      [{ name: 'a' }, { name: 'b' }, { name: 'c' }],
      async (p) => {
        tried.push(p.name)
        if (p.name === 'a') throw failure('a', 'http_status', 'HTTP 500', 500)
        return `answer from ${p.name}`
      },
      options,
    )
    expect(result).toEqual({ provider: { name: 'b' }, answer: 'answer from b' })
    expect(tried).toEqual(['a', 'b'])
  })

  it('all failed: 502 naming each failure, a foreign error counted as a network failure', async () => {
    const err = await firstAnswer(
      [{ name: 'slow' }, { name: 'broken' }],
      (p, signal) => (p.name === 'slow' ? hang(signal) : Promise.reject(new TypeError('boom'))),
      options,
    ).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(AppError)
    const appError = err as AppError
    expect(appError.status).toBe(502)
    expect(appError.code).toBe('things_failed')
    expect(appError.message).toBe(
      'every configured thing provider failed: slow: timed out after 30 ms; broken: failed (TypeError)',
    )
  })

  it("stops at the caller's abort without trying the next provider", async () => {
    const outer = new AbortController()
    const gone = new Error('client went away')
    const tried: string[] = []
    const call = firstAnswer(
      [{ name: 'a' }, { name: 'b' }],
      (p, signal) => {
        tried.push(p.name)
        outer.abort(gone)
        return hang(signal)
      },
      { ...options, timeoutMs: 5_000, signal: outer.signal },
    )
    await expect(call).rejects.toBe(gone)
    expect(tried).toEqual(['a'])
  })
})

describe('fetchProviderJson', () => {
  const signal = new AbortController().signal
  const answer =
    (body: string, status = 200) =>
    async () =>
      new Response(body, { status })

  it('decodes the JSON body', async () => {
    expect(
      await fetchProviderJson('p', answer('{"ok":true}'), 'https://p.test', { signal }, failure),
    ).toEqual({
      ok: true,
    })
  })

  it.each([
    [401, 'HTTP 401 (credential rejected)'],
    [429, 'HTTP 429 (rate limited)'],
    [503, 'HTTP 503'],
  ])('classifies status %i without reading the body into the detail', async (status, detail) => {
    const err = await fetchProviderJson(
      'p',
      answer('secret upstream text', status),
      'https://p.test',
      { signal },
      failure,
    ).catch((e: unknown) => e)
    expect(err).toMatchObject({ provider: 'p', kind: 'http_status', detail, status })
  })

  it('classifies a refused connection and a body that is not JSON', async () => {
    const refused = async () => {
      throw new TypeError('fetch failed')
    }
    await expect(
      fetchProviderJson('p', refused, 'https://p.test', { signal }, failure),
    ).rejects.toMatchObject({
      kind: 'network',
      detail: 'network error (TypeError)',
    })
    await expect(
      fetchProviderJson('p', answer('<html>'), 'https://p.test', { signal }, failure),
    ).rejects.toMatchObject({
      kind: 'malformed',
      detail: 'malformed response body (not JSON)',
    })
  })
})
