/**
 * Request and response bodies of the token endpoints. Field names follow OAuth 2.0 (RFC 6749 §5.1:
 * `access_token`, `token_type`, `expires_in`, `refresh_token`); errors use the product's
 * `{"error":{message,type,param,code}}` shape.
 */
import { z } from '@hono/zod-openapi'
import { AUDIENCES } from '../../../shared/crypto/access-token'
import { JWS_ALGORITHMS } from '../../../shared/crypto/jws-algorithms'

const JwsAlgorithmSchema = z.enum(JWS_ALGORITHMS).openapi({
  description:
    'JWS algorithm of the issued token. Default: the first of ML-DSA-65, ML-DSA-87, ML-DSA-44, EdDSA that the workspace crypto policy allows outright (ML-DSA-65 under Default and Strict, ML-DSA-87 under Maximum and Government). EdDSA only where the policy allows classical signatures.',
  example: 'ML-DSA-65',
})

export const ServiceTokenRequestSchema = z
  .object({
    grant_type: z
      .literal('client_credentials')
      .optional()
      .openapi({ description: 'Optional; OAuth 2.0 client credentials grant.' }),
    client_id: z
      .string()
      .uuid()
      .openapi({ description: 'The service account id', example: '0b9c2f1e-1d2c-4c1b-9a0e-2f4b6c8d0e1f' }),
    client_secret: z
      .string()
      .min(1)
      .max(256)
      .openapi({ description: 'The service account secret (`svc_sa_…`)' }),
    audience: z.enum(AUDIENCES).optional().openapi({
      description:
        'Token audience; must be one the account allows (403 `audience_not_allowed` otherwise: service accounts hold `internal-service` and `external-api`, `platform` tokens are for people). Default: the first audience of the account.',
    }),
    alg: JwsAlgorithmSchema.optional(),
  })
  .strict()
  .openapi('ServiceTokenRequest')

export const LoginRequestSchema = z
  .object({
    email: z.string().min(3).max(320).openapi({ example: 'owner@dev.localhost' }),
    password: z.string().min(1).max(1024),
    tenant_id: z.string().uuid().optional().openapi({
      description: 'Workspace to log in to; required only when the user belongs to several.',
    }),
    alg: JwsAlgorithmSchema.optional(),
  })
  .strict()
  .openapi('LoginRequest')

export const RefreshRequestSchema = z
  .object({
    grant_type: z
      .literal('refresh_token')
      .optional()
      .openapi({ description: 'Optional; OAuth 2.0 refresh grant.' }),
    refresh_token: z
      .string()
      .min(1)
      .max(256)
      .openapi({ description: 'The refresh token (`svc_rt_…`); single use.' }),
    alg: JwsAlgorithmSchema.optional(),
  })
  .strict()
  .openapi('RefreshRequest')

const tokenFields = {
  access_token: z
    .string()
    .openapi({ description: 'A compact JWS (JWT). Send it as `Authorization: Bearer <token>`.' }),
  token_type: z.literal('Bearer'),
  expires_in: z
    .number()
    .int()
    .openapi({ description: 'Seconds until the access token expires', example: 900 }),
  tenant_id: z
    .string()
    .uuid()
    .openapi({ description: 'The workspace the token is scoped to (claim `tenant_id`)' }),
  audience: z.enum(AUDIENCES).openapi({ description: 'Claim `aud`' }),
  alg: JwsAlgorithmSchema,
}

export const ServiceTokenResponseSchema = z.object(tokenFields).openapi('ServiceTokenResponse')

export const UserTokenResponseSchema = z
  .object({
    ...tokenFields,
    refresh_token: z.string().openapi({
      description:
        'Single-use refresh token (`svc_rt_…`). Each refresh returns a new one; presenting a spent one revokes every token of this login.',
    }),
    refresh_token_expires_in: z.number().int().openapi({ example: 2592000 }),
  })
  .openapi('UserTokenResponse')

export const JwksSchema = z
  .object({
    keys: z.array(
      z.record(z.string(), z.unknown()).openapi({
        description:
          'A public JWK with `kid`, `alg`, `use:"sig"`: `{kty:"AKP", alg:"ML-DSA-65", pub}` (RFC 9964) or `{kty:"OKP", crv:"Ed25519", x, alg:"EdDSA"}`',
      }),
    ),
  })
  .openapi('Jwks')

export { errorResponse } from '../../../shared/http/error-body'
