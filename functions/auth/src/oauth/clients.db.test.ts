/**
 * Open client registration against Postgres, with the clock injected: the per-address throttle
 * (its window, its Retry-After, concurrent registrations) and the expiry of clients that never
 * completed an authorization (refused, then swept by later registrations).
 *
 * Dates are recent and the TTL short, so the sweeps of other tests (24 h TTL) never take these
 * clients, and this test's sweep only takes clients older than its own short TTL.
 */
import { eq, inArray } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { oauthClients } from '../../../../shared/db/schema'
import { AppError } from '../../../../shared/http/errors'
import { withTestDatabase } from '../../../../test/unit/database'
import { findClient, markClientAuthorized, registerClient } from './clients'
import { countRegistration } from './registration-throttle'

const REQUEST = { redirect_uris: ['http://127.0.0.1:4000/cb'], client_name: 'expiry' }
const settings = { registrationsPerAddress: 10, registrationWindowSeconds: 3600 }
const address = () => `2001:db8:c::${crypto.randomUUID().slice(0, 4)}`

async function refusal(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => new Error('accepted'),
    (e: unknown) => e,
  )
  if (!(error instanceof AppError)) throw error
  return error
}

describe('client registration throttle', () => {
  it('allows 10 registrations per address per hour, then 429 with Retry-After until the window ends', async () => {
    const from = address()
    const start = new Date(Date.now() - 60_000)
    await withTestDatabase(async (db) => {
      for (let i = 0; i < 10; i++)
        await countRegistration(db, from, settings, new Date(start.getTime() + i * 1000))
      const tooMany = await refusal(
        countRegistration(db, from, settings, new Date(start.getTime() + 600_000)),
      )
      expect(tooMany).toMatchObject({ status: 429, code: 'registration_throttled' })
      expect(tooMany.headers['retry-after']).toBe('3000')
      expect(tooMany.toBody()).toMatchObject({ error: 'registration_throttled' })
      // Another address is not affected.
      await countRegistration(db, address(), settings, new Date(start.getTime() + 600_000))
      // Once the window is over, a new one starts.
      await countRegistration(db, from, settings, new Date(start.getTime() + 3_600_000))
    })
  })

  it('lets exactly the limit through when registrations race', async () => {
    const from = address()
    const now = new Date()
    const results = await Promise.allSettled(
      Array.from({ length: 16 }, () => withTestDatabase((db) => countRegistration(db, from, settings, now))),
    )
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(10)
    for (const r of results) {
      if (r.status === 'rejected') expect(r.reason).toMatchObject({ status: 429 })
    }
  })
})

describe('clients that never complete an authorization', () => {
  const TTL = 300

  it(`expire ${TTL} s after registering: refused at once, deleted by a later registration`, async () => {
    const now = new Date()
    const ago = (s: number) => new Date(now.getTime() - s * 1000)
    await withTestDatabase(async (db) => {
      // In this order: a registration sweeps the clients expired at its own time.
      const fresh = (await registerClient(db, REQUEST, TTL, ago(60))).client_id
      const stale = (await registerClient(db, REQUEST, TTL, ago(600))).client_id
      const used = (await registerClient(db, REQUEST, TTL, ago(600))).client_id
      await markClientAuthorized(db, used, ago(590))

      expect(await findClient(db, stale, TTL, ago(301))).toMatchObject({ id: stale })
      expect(await findClient(db, stale, TTL, now)).toBe('expired')
      expect(await findClient(db, used, TTL, now)).toMatchObject({ id: used })
      expect(await findClient(db, fresh, TTL, now)).toMatchObject({ id: fresh })

      await registerClient(db, REQUEST, TTL, now)
      const left = await db
        .select({ id: oauthClients.id })
        .from(oauthClients)
        .where(inArray(oauthClients.id, [stale, used, fresh]))
      expect(left.map((r) => r.id).sort()).toEqual([used, fresh].sort())
      expect(await findClient(db, stale, TTL, now)).toBeNull()
    })
  })

  it('a client keeps its first authorization time', async () => {
    const now = new Date()
    await withTestDatabase(async (db) => {
      const id = (await registerClient(db, REQUEST, TTL, now)).client_id
      const first = new Date(now.getTime() + 1000)
      await markClientAuthorized(db, id, first)
      await markClientAuthorized(db, id, new Date(now.getTime() + 5000))
      const [row] = await db
        .select({ authorizedAt: oauthClients.authorizedAt })
        .from(oauthClients)
        .where(eq(oauthClients.id, id))
      expect(row!.authorizedAt!.getTime()).toBe(first.getTime())
    })
  })
})
