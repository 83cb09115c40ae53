import type { Jwks } from '../../../shared/crypto'
import type { JwsAlgorithm } from '../../../shared/crypto/jws-algorithms'
import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { authApp } from './auth.app'
import type { AuthEnv } from './auth.context'
import { type DocumentSignature, keyRingFor, signDocument } from './signing-keys'

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

  /**
   * RPC for workers that sign documents with the token keys (inference receipts, attestations,
   * audit checkpoints): a raw signature of `data` by the current key of `alg`, with its kid. The
   * private keys never leave this worker; anyone verifies with the public JWKS.
   */
  async sign(data: Uint8Array, alg: JwsAlgorithm): Promise<DocumentSignature> {
    return signDocument(this.env.JWT_SIGNING_KEYS, data, alg)
  }
}
