import type { Jwks } from '../../../shared/crypto'
import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { authApp } from './auth.app'
import type { AuthEnv } from './auth.context'
import { keyRingFor } from './signing-keys'

export default class AuthWorker extends FamilyEntrypoint<AuthEnv> {
  protected readonly app = authApp

  /**
   * RPC for the gateway: the public JWKS the gateway verifies access tokens with (the same
   * document as /.well-known/jwks.json). Throws AppError 503 when no signing keys are configured.
   */
  async verificationKeys(): Promise<Jwks> {
    const ring = await keyRingFor(this.env.JWT_SIGNING_KEYS)
    return ring.jwks
  }
}
