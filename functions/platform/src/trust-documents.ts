/**
 * GET /platform/v1/crypto/cbom, /compliance and /attestation (docs/trust-plane.md).
 *
 * - cbom: CycloneDX 1.6 JSON (cbom.ts), served as its RFC 8785 canonical JSON so its SHA-384 digest
 *   (x-svc-cbom-digest) is the one the attestation names.
 * - compliance: CNSA 2.0 and FIPS 140-3, requirement by requirement (compliance.ts).
 * - attestation: an in-toto Statement v1 in a DSSE envelope, signed with ML-DSA-65 and Ed25519 by
 *   the auth worker's `sign` RPC (the token keys: verify with /.well-known/jwks.json); subjects are
 *   the policy digest, the CBOM digest and the pinned libraries; the predicate holds the effective
 *   policy, the registry digest, the self-test report with its ACVP revisions, runtime facts, the
 *   signing keys and JWKS URL, the compliance summary and the latest audit checkpoint. The statement
 *   is appended to the tenant's audit log before it is returned.
 */

import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi'
import { appendAuditEvent, auditLogOf } from '../../../durable-objects/audit-log/audit-client'
import { canonicalJson, sha256Hex, sha384Hex } from '../../../shared/crypto/digests'
import { preAuthEncoding } from '../../../shared/crypto/dsse'
import { base64Encode, utf8 } from '../../../shared/crypto/encoding'
import type { JwsAlgorithm } from '../../../shared/crypto/jws-algorithms'
import { ALGORITHM_REGISTRY } from '../../../shared/crypto-policy'
import { AppError } from '../../../shared/http/errors'
import { type FamilyEnv, identityOf } from '../../../shared/worker/family-app'
import { actorOf } from '../../../shared/worker/request-context'
import { auditLogNamespace, renderCheckpoint, unwrap } from './audit-log'
import { buildCbom, integrityHash } from './cbom'
import { assessCompliance } from './compliance'
import { ACVP_REVISIONS, SELF_TEST_SOURCES } from './conformance-manifest'
import { deployedBundles } from './deployed-bundles'
import type { PlatformEnv } from './platform.context'
import { errorResponse } from './platform.schemas'
import { BUILD_FACTS, loadPosture, type Posture } from './posture'

export const DSSE_PAYLOAD_TYPE = 'application/vnd.in-toto+json'
export const PREDICATE_TYPE = 'urn:svc:attestation:crypto-posture:v1'
const ATTESTATION_TTL_MS = 24 * 3600 * 1000
const ATTESTATION_SIGNERS: readonly JwsAlgorithm[] = ['ML-DSA-65', 'EdDSA']

function cbomOf(posture: Posture) {
  return buildCbom({
    application: BUILD_FACTS.application,
    libraries: BUILD_FACTS.libraries,
    tenantId: posture.tenantId,
    policy: posture.view.policy,
    policyDigest: posture.policyDigest,
    keys: posture.keys,
  })
}

function complianceOf(posture: Posture) {
  return assessCompliance({
    policy: posture.view.policy,
    tokenKeyAlgorithms: [...new Set(posture.jwks.keys.map((k) => k.alg))],
    selfTests: posture.selfTests?.report ?? null,
  })
}

const cbomRoute = createRoute({
  method: 'get',
  path: '/platform/v1/crypto/cbom',
  operationId: 'getCryptoCbom',
  tags: ['Crypto policy'],
  summary: 'Cryptographic Bill of Materials (CycloneDX 1.6) of what runs for this workspace',
  description:
    'Libraries with the versions and integrity hashes the build pinned, every algorithm implemented or allowed by the effective policy (OIDs, nistQuantumSecurityLevel, the policy decision), the live public keys as related crypto material, and the protocols in use. The body is RFC 8785 canonical JSON; x-svc-cbom-digest is its SHA-384, the digest the attestation names.',
  responses: {
    200: {
      description: 'CycloneDX 1.6 JSON',
      content: { 'application/vnd.cyclonedx+json': { schema: z.record(z.string(), z.unknown()) } },
    },
    503: errorResponse('audit_log_unavailable, log_signing_keys_unavailable, signing_keys_unavailable'),
  },
})

const complianceRoute = createRoute({
  method: 'get',
  path: '/platform/v1/crypto/compliance',
  operationId: 'getCryptoCompliance',
  tags: ['Crypto policy'],
  summary: 'CNSA 2.0 and FIPS 140-3 status, requirement by requirement, with evidence and dates',
  description:
    'Status per requirement: met, partially_met, not_met, not_applicable; evidence names the setting, algorithm or test; dates give the CNSA 2.0 timeline and NIST IR 8547 (classical deprecated after 2030, disallowed after 2035). The product runs no CMVP-validated module and says so.',
  responses: {
    200: {
      description: 'Compliance report',
      content: {
        'application/json': { schema: z.record(z.string(), z.unknown()).openapi('CryptoCompliance') },
      },
    },
    503: errorResponse('audit_log_unavailable, signing_keys_unavailable'),
  },
})

const attestationRoute = createRoute({
  method: 'get',
  path: '/platform/v1/crypto/attestation',
  operationId: 'getCryptoAttestation',
  tags: ['Crypto policy'],
  summary:
    "A signed attestation of this workspace's crypto posture (in-toto Statement v1 in a DSSE envelope)",
  description:
    'Signed with ML-DSA-65 and Ed25519 (keyid = the JWK kid; verify with /.well-known/jwks.json over the DSSE v1 PAE). Subjects: the policy digest (SHA-384 of its RFC 8785 JSON, as GET /platform/v1/crypto/policy shows), the CBOM digest, the pinned libraries. Each attestation is appended to the workspace audit log; `audit_log` says where.',
  responses: {
    200: {
      description: 'The envelope, the decoded statement, and its audit-log entry',
      content: {
        'application/json': { schema: z.record(z.string(), z.unknown()).openapi('CryptoAttestation') },
      },
    },
    503: errorResponse('signing_service_unavailable, audit_log_unavailable, signing_algorithm_unavailable'),
  },
})

export function trustDocumentRoutes(app: OpenAPIHono<FamilyEnv<PlatformEnv>>): void {
  app.openAPIRegistry.registerPath(cbomRoute)
  app.get(cbomRoute.path.replace(/{(\w+)}/g, ':$1'), async (c) => {
    const posture = await loadPosture(c)
    const text = canonicalJson(cbomOf(posture))
    const body = utf8.encode(text)
    return c.body(text, 200, {
      'content-type': 'application/vnd.cyclonedx+json',
      'x-svc-cbom-digest': `sha384:${sha384Hex(body)}`,
    })
  })

  app.openapi(complianceRoute, async (c) => {
    const posture = await loadPosture(c)
    return c.json({ tenant_id: posture.tenantId, ...complianceOf(posture) }, 200)
  })

  app.openapi(attestationRoute, async (c) => {
    const identity = identityOf(c)
    const posture = await loadPosture(c)
    const auth = c.env.AUTH!
    const tenantLog = auditLogOf(auditLogNamespace(c.env), identity.tenantId)
    const { checkpoint } = unwrap(await tenantLog.checkpoint({ tenantId: identity.tenantId }))
    const cbomBytes = utf8.encode(canonicalJson(cbomOf(posture)))
    const compliance = complianceOf(posture)
    const baseUrl = c.get('request').baseUrl
    const now = Date.now()
    // The JWKS lists the keys in JWT_SIGNING_KEYS order: the first of each algorithm is the one
    // the auth worker signs with, so the signed predicate can name the kids before signing.
    const signingKeys = ATTESTATION_SIGNERS.map((alg) => ({
      alg,
      kid: posture.jwks.keys.find((k) => k.alg === alg)?.kid ?? null,
    }))
    const bundles = deployedBundles(c.env.DEPLOYED_BUNDLES)
    const subjects = [
      ...(bundles ?? []).map((b) => ({ name: `worker:${b.worker}`, digest: { sha256: b.sha256 } })),
      {
        name: `crypto-policy:${identity.tenantId}`,
        digest: { sha384: posture.policyDigest.replace(/^sha384:/, '') },
      },
      { name: `cbom:${identity.tenantId}`, digest: { sha384: sha384Hex(cbomBytes) } },
      ...BUILD_FACTS.libraries.flatMap((lib) => {
        const hash = integrityHash(lib.integrity)
        return hash
          ? [
              {
                name: `pkg:npm/${lib.name}@${lib.version}`,
                digest: { [hash.alg.replace('SHA-', 'sha')]: hash.content },
              },
            ]
          : []
      }),
    ]
    const statement = {
      _type: 'https://in-toto.io/Statement/v1',
      subject: subjects,
      predicateType: PREDICATE_TYPE,
      predicate: {
        tenant_id: identity.tenantId,
        issued_at: new Date(now).toISOString(),
        expires_at: new Date(now + ATTESTATION_TTL_MS).toISOString(),
        effective_policy: {
          preset: posture.view.preset,
          customized: posture.view.customized,
          policy: posture.view.policy,
          digest: posture.policyDigest,
        },
        registry: {
          digest: `sha384:${sha384Hex(utf8.encode(canonicalJson(ALGORITHM_REGISTRY)))}`,
          algorithms: ALGORITHM_REGISTRY.length,
        },
        self_tests: {
          acvp_revisions: [...ACVP_REVISIONS],
          ran_at: posture.selfTests ? new Date(posture.selfTests.ranAt).toISOString() : null,
          passed: posture.selfTests?.report.passed ?? null,
          tests: (posture.selfTests?.report.tests ?? []).map((t) => ({
            name: t.name,
            algorithm: t.algorithm,
            implementation: t.implementation ?? null,
            passed: t.passed,
            vector: SELF_TEST_SOURCES[t.name] ?? null,
          })),
        },
        runtime: {
          platform: 'Cloudflare Workers (workerd)',
          user_agent: typeof navigator === 'undefined' ? null : navigator.userAgent,
          application: BUILD_FACTS.application,
          // Subjects `worker:<name>` carry the digests; null = the deployment did not provide them.
          deployed_bundles: bundles,
          libraries: BUILD_FACTS.libraries.map(({ name, version, integrity }) => ({
            name,
            version,
            integrity,
          })),
        },
        signing: {
          keys: signingKeys,
          jwks_url: `${baseUrl}/.well-known/jwks.json`,
        },
        compliance: compliance.frameworks.map((f) => ({ framework: f.framework, summary: f.summary })),
        audit_log: { origin: checkpoint.origin, tree_size: checkpoint.size, checkpoint: checkpoint.note },
      },
    }
    const payload = utf8.encode(canonicalJson(statement))
    const pae = preAuthEncoding(DSSE_PAYLOAD_TYPE, payload)
    const signatures = []
    for (const alg of ATTESTATION_SIGNERS) {
      const signed = await auth.sign(pae, alg)
      if (!signed.ok) {
        throw new AppError(503, signed.code, `The attestation could not be signed: ${signed.message}`, {
          headers: { 'retry-after': '30' },
        })
      }
      if (signed.kid !== signingKeys.find((k) => k.alg === alg)?.kid) {
        // The keys rotated between reading the JWKS and signing: the predicate would name the wrong kid.
        throw new AppError(
          503,
          'signing_keys_rotating',
          'The signing keys are being rotated; retry shortly.',
          {
            headers: { 'retry-after': '5' },
          },
        )
      }
      signatures.push({ keyid: signed.kid, alg, sig: base64Encode(signed.signature) })
    }
    const receipt = await appendAuditEvent(c.env.AUDIT_LOG, identity.tenantId, {
      kind: 'attestation.issued',
      statement_digest: `sha256:${sha256Hex(payload)}`,
      subjects: subjects.map((s) => ({
        name: s.name,
        digest: Object.entries(s.digest)
          .map(([alg, hex]) => `${alg}:${hex}`)
          .join(','),
      })),
      signatures: signatures.map(({ keyid, alg }) => ({ keyid, alg })),
      actor: actorOf(identity),
      request_id: c.get('request').requestId,
    })
    return c.json(
      {
        object: 'crypto_attestation',
        envelope: {
          payloadType: DSSE_PAYLOAD_TYPE,
          payload: base64Encode(payload),
          signatures: signatures.map(({ keyid, sig }) => ({ keyid, sig })),
        },
        statement,
        jwks_url: `${baseUrl}/.well-known/jwks.json`,
        audit_log: {
          origin: receipt.log,
          index: receipt.index,
          leaf_hash: base64Encode(receipt.leafHash),
          checkpoint: await renderCheckpoint(c.env, checkpoint, 'tenant'),
        },
      },
      200,
    )
  })
}
