/**
 * A signed-in request's client of the product's API (./console-api.ts) with the session's tokens:
 * the access token refreshed when it runs out (or once when the API refuses it), and the session
 * ended when the refresh is refused. Also the database access of session handling.
 */
import { type Drizzle, openDatabase } from '../../../shared/db/client'
import { AppError } from '../../../shared/http/errors'
import type { ConsoleContext, ConsoleEnv } from './console.context'
import { consoleApi, jsonRequest } from './console-api'
import { type ConsoleSession, endSession, type SessionTokens, storeRefreshedTokens } from './session'

/** The session is over (refresh refused, membership ended): the person signs in again. */
export class SessionEnded extends Error {}

export async function withDatabase<T>(
  env: ConsoleEnv,
  ctx: Pick<ExecutionContext, 'waitUntil'>,
  work: (db: Drizzle) => Promise<T>,
): Promise<T> {
  const database = openDatabase(env, { max: 1 })
  try {
    return await work(database.db)
  } catch (err) {
    if (err instanceof AppError || err instanceof SessionEnded) throw err
    throw new AppError(
      503,
      'console_store_unavailable',
      'The console cannot reach its database; retry shortly.',
      {
        internalMessage: String(err),
      },
    )
  } finally {
    ctx.waitUntil(database.close())
  }
}

/** Tokens from a login or refresh answer, with the access token's expiry. */
export function tokensFrom(body: {
  access_token: string
  refresh_token: string
  expires_in: number
}): SessionTokens {
  return {
    accessToken: body.access_token,
    refreshToken: body.refresh_token,
    accessExpiresAt: Date.now() + body.expires_in * 1000,
  }
}

/** The gateway, called over the console's service binding. */
export function gatewayOf(c: ConsoleContext) {
  return (request: Request) => c.env.GATEWAY.fetch(request)
}

export function sessionApi(c: ConsoleContext, session: ConsoleSession) {
  const baseUrl = c.get('baseUrl')
  const dispatch = gatewayOf(c)
  let refreshing: Promise<boolean> | null = null
  const refresh = () => {
    refreshing ??= (async () => {
      const res = await dispatch(
        jsonRequest(`${baseUrl}/auth/token/refresh`, { refresh_token: session.tokens.refreshToken }),
      )
      if (!res.ok) {
        // Spent, revoked or the person left the workspace: the session is over.
        await withDatabase(c.env, c.executionCtx, (db) => endSession(db, session.id))
        throw new SessionEnded()
      }
      const tokens = tokensFrom(await res.json())
      await withDatabase(c.env, c.executionCtx, (db) => storeRefreshedTokens(db, session, tokens))
      return true
    })()
    return refreshing
  }
  return consoleApi({
    dispatch,
    baseUrl,
    mode: c.get('mode'),
    accessToken: async () => {
      if (session.tokens.accessExpiresAt - 30_000 <= Date.now()) await refresh()
      return session.tokens.accessToken
    },
    refreshAfterRefusal: async () => {
      if (refreshing) return false
      return refresh()
    },
  })
}
