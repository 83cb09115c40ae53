import { createFamilyApp } from '../../../shared/worker/family-app'
import { answerUnreleasedRoutes } from '../../../shared/worker/unreleased-routes'
import { algorithmRoutes } from './algorithms'
import { apiKeyRoutes } from './api-keys'
import { auditLogRoutes } from './audit-log'
import { cryptoPolicyRoutes } from './crypto-policy'
import type { PlatformEnv } from './platform.context'
import { serviceAccountRoutes } from './service-accounts'
import { trustDocumentRoutes } from './trust-documents'
import { trustPageRoutes } from './trust-pages'
import { usageRoutes } from './usage'
import { workspaceRoutes } from './workspace'

export const platformApp = createFamilyApp<PlatformEnv>()

cryptoPolicyRoutes(platformApp)
algorithmRoutes(platformApp)
serviceAccountRoutes(platformApp)
apiKeyRoutes(platformApp)
workspaceRoutes(platformApp)
usageRoutes(platformApp)
auditLogRoutes(platformApp)
trustDocumentRoutes(platformApp)
trustPageRoutes(platformApp)
// Every platform route is served above; a route added to the table before its handler answers 501.
answerUnreleasedRoutes(platformApp, 'platform', [
  'GET /platform/v1/crypto/policy',
  'PUT /platform/v1/crypto/policy',
  'PATCH /platform/v1/crypto/policy',
  'GET /platform/v1/crypto/policy/check',
  'GET /platform/v1/crypto/algorithms',
  'GET /platform/v1/crypto/violations',
  'GET /platform/v1/crypto/decisions',
  'GET /platform/v1/audit-log/checkpoint',
  'POST /platform/v1/audit-log/checkpoint',
  'GET /platform/v1/audit-log/entries',
  'GET /platform/v1/audit-log/proofs/inclusion',
  'GET /platform/v1/audit-log/proofs/consistency',
  'GET /platform/v1/audit-log/keys',
  'GET /platform/v1/crypto/cbom',
  'GET /platform/v1/crypto/compliance',
  'GET /platform/v1/crypto/attestation',
  'GET /trust/conformance',
  'GET /trust/entropy',
  'GET /platform/v1/service-accounts',
  'POST /platform/v1/service-accounts',
  'POST /platform/v1/service-accounts/:serviceAccountId/rotate',
  'DELETE /platform/v1/service-accounts/:serviceAccountId',
  'GET /platform/v1/api-keys',
  'POST /platform/v1/api-keys',
  'GET /platform/v1/api-keys/:keyId',
  'POST /platform/v1/api-keys/:keyId/rotate',
  'DELETE /platform/v1/api-keys/:keyId',
  'GET /platform/v1/workspace',
  'GET /platform/v1/plans',
  'GET /platform/v1/billing',
  'PATCH /platform/v1/billing',
  'POST /platform/v1/billing/plan',
  'GET /platform/v1/usage',
  'GET /platform/v1/usage/requests',
])
