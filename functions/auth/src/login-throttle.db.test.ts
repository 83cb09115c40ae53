/**
 * The lockout rule against Postgres: failures count per (account, address), so a stranger who
 * guesses wrong locks their own address out of the account, not its owner; a slower per-account
 * backstop still stops guesses spread over many addresses. Each test uses accounts and addresses
 * of its own.
 */
import { describe, expect, it } from 'vitest'
import { AppError } from '../../../shared/http/errors'
import { withTestDatabase } from '../../../test/unit/database'
import { authSettings } from './auth.context'
import {
  assertNotThrottled,
  clearAccount,
  clientThrottleKeys,
  loginThrottleKeys,
  recordFailure,
} from './login-throttle'

/** The defaults, with a backstop small enough to reach in a test. */
const settings = { ...authSettings({}), maxFailuresPerAccount: 12 }
const account = () => `victim-${crypto.randomUUID()}@example.test`
const address = () => `2001:db8:1::${crypto.randomUUID().slice(0, 4)}:${crypto.randomUUID().slice(0, 4)}`

async function refusal(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => new Error('accepted'),
    (e: unknown) => e,
  )
  if (!(error instanceof AppError)) throw error
  return error
}

describe('login lockout', () => {
  it("five failures lock the stranger's address out of the account; the owner signs in from theirs", async () => {
    const email = account()
    const stranger = address()
    const owner = address()
    await withTestDatabase(async (db) => {
      for (let i = 0; i < 5; i++) {
        const keys = loginThrottleKeys(email, stranger, settings)
        await assertNotThrottled(db, keys)
        await recordFailure(db, keys, settings)
      }
      const locked = await refusal(assertNotThrottled(db, loginThrottleKeys(email, stranger, settings)))
      expect(locked).toMatchObject({ status: 429, code: 'login_throttled' })
      expect(Number(locked.headers['retry-after'])).toBeGreaterThan(890)
      expect(locked.message).toMatch(/^Too many failed sign-ins to this account from your address;/)
      await expect(assertNotThrottled(db, loginThrottleKeys(email, owner, settings))).resolves.toBeDefined()
      // The stranger's address still tries other accounts (its own limit is 20 over all accounts).
      await expect(
        assertNotThrottled(db, loginThrottleKeys(account(), stranger, settings)),
      ).resolves.toBeDefined()
    })
  })

  it('failures from many addresses reach the per-account backstop: then the account is locked everywhere', async () => {
    const email = account()
    await withTestDatabase(async (db) => {
      // 3 addresses × 4 failures: none reaches its own (account, address) limit of 5.
      for (const from of [address(), address(), address()]) {
        for (let i = 0; i < 4; i++)
          await recordFailure(db, loginThrottleKeys(email, from, settings), settings)
      }
      const locked = await refusal(assertNotThrottled(db, loginThrottleKeys(email, address(), settings)))
      expect(locked).toMatchObject({ status: 429, code: 'login_throttled' })
      expect(locked.message).toMatch(/^Too many failed sign-ins to this account from many addresses;/)
    })
  })

  it('20 failures from one address over many accounts lock that address for every account', async () => {
    const spray = address()
    await withTestDatabase(async (db) => {
      for (let i = 0; i < 20; i++)
        await recordFailure(db, loginThrottleKeys(account(), spray, settings), settings)
      const locked = await refusal(assertNotThrottled(db, loginThrottleKeys(account(), spray, settings)))
      expect(locked.message).toMatch(/^Too many failed sign-ins from your address;/)
    })
  })

  it("a success clears the address's count for the account, not the account's backstop", async () => {
    const email = account()
    const from = address()
    await withTestDatabase(async (db) => {
      const keys = loginThrottleKeys(email, from, settings)
      for (let i = 0; i < 4; i++) await recordFailure(db, keys, settings)
      await clearAccount(db, keys)
      for (let i = 0; i < 4; i++) await recordFailure(db, keys, settings)
      await expect(assertNotThrottled(db, keys)).resolves.toBeDefined()
      // 8 failures stay on the account's backstop (12): 4 more from anywhere lock it.
      for (let i = 0; i < 4; i++)
        await recordFailure(db, loginThrottleKeys(email, address(), settings), settings)
      expect(
        await refusal(assertNotThrottled(db, loginThrottleKeys(email, address(), settings))),
      ).toMatchObject({
        status: 429,
      })
    })
  })

  it('service-token exchanges follow the same rule per (client id, address)', async () => {
    const clientId = crypto.randomUUID()
    const stranger = address()
    await withTestDatabase(async (db) => {
      for (let i = 0; i < 5; i++)
        await recordFailure(db, clientThrottleKeys(clientId, stranger, settings), settings)
      expect(
        await refusal(assertNotThrottled(db, clientThrottleKeys(clientId, stranger, settings))),
      ).toMatchObject({
        status: 429,
      })
      await expect(
        assertNotThrottled(db, clientThrottleKeys(clientId, address(), settings)),
      ).resolves.toBeDefined()
    })
  })
})
