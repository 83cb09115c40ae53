/**
 * The keys the gateway verifies access tokens with: the auth worker's public JWKS, fetched over
 * the AUTH service binding (`verificationKeys()` RPC) and imported once per isolate. Refreshed
 * every five minutes, and at once (at most every ten seconds) when a token names an unknown `kid`,
 * so a key rotation reaches every isolate without a deploy of the gateway.
 */
import {
  createVerificationKeySet,
  type VerificationKey,
  type VerificationKeySet,
} from '../../../shared/crypto'
import { AppError } from '../../../shared/http/errors'
import type { GatewayEnv } from './gateway.context'

const REFRESH_MS = 5 * 60_000
const UNKNOWN_KID_REFRESH_MS = 10_000

let current: { set: VerificationKeySet; fetchedAt: number } | undefined

async function fetchKeys(env: Pick<GatewayEnv, 'AUTH'>): Promise<VerificationKeySet> {
  let jwks: unknown
  try {
    jwks = await env.AUTH.verificationKeys()
  } catch (err) {
    throw new AppError(
      503,
      'token_keys_unavailable',
      'Access tokens cannot be checked right now (the signing keys are unavailable); retry shortly or use an API key.',
      { internalMessage: `verificationKeys RPC failed: ${String(err)}`, headers: { 'retry-after': '5' } },
    )
  }
  const set = await createVerificationKeySet(jwks)
  current = { set, fetchedAt: Date.now() }
  return set
}

/** Resolves a `kid` to a verification key, refreshing the key set when it is stale or lacks the kid. */
export async function resolveTokenKey(
  env: Pick<GatewayEnv, 'AUTH'>,
  kid: string,
): Promise<VerificationKey | undefined> {
  const now = Date.now()
  let set = current && now - current.fetchedAt < REFRESH_MS ? current.set : await fetchKeys(env)
  let key = set.resolve(kid)
  if (!key && current && now - current.fetchedAt >= UNKNOWN_KID_REFRESH_MS) {
    set = await fetchKeys(env)
    key = set.resolve(kid)
  }
  return key
}
