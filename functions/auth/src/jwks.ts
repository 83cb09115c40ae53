/** GET /.well-known/jwks.json: the public keys that sign access tokens, current and rotated-out. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import type { FamilyEnv } from '../../../shared/worker/family-app'
import type { AuthEnv } from './auth.context'
import { errorResponse, JwksSchema } from './auth.schemas'
import { keyRingFor } from './signing-keys'

export function jwksRoutes(app: OpenAPIHono<FamilyEnv<AuthEnv>>): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: '/.well-known/jwks.json',
      tags: ['Auth'],
      summary: 'Public signing keys (JWKS, RFC 7517; ML-DSA keys as RFC 9964 AKP JWKs) (public)',
      description:
        'Every key that signed a token that may still be valid: the current key of each algorithm (ML-DSA-65, ML-DSA-87, EdDSA locally) and keys rotated out but kept until their tokens expire. `kid` is the RFC 7638 thumbprint.',
      responses: {
        200: { description: 'JWKS', content: { 'application/json': { schema: JwksSchema } } },
        503: errorResponse('signing_keys_unavailable'),
      },
    }),
    async (c) => {
      const ring = await keyRingFor(c.env.JWT_SIGNING_KEYS)
      return c.json(ring.jwks, 200, { 'cache-control': 'public, max-age=300' })
    },
  )
}
