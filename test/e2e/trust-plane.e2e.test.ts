/**
 * The trust plane end to end through the gateway, checked only with tools that are not the
 * product's: the audit log's proofs with the independent RFC 9162 verifier, its checkpoints with
 * sigstore's signed-note verifier (Ed25519) and liboqs (ML-DSA-44 cosignature), the CBOM with the
 * official CycloneDX library's strict 1.6 validator, the attestation with a DSSE PAE rebuilt here
 * and the public JWKS (liboqs for ML-DSA-65, Node for Ed25519), the policy digest with the
 * `canonicalize` package (RFC 8785). Each scenario gets its own workspace.
 */
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { Spec, Validation } from '@cyclonedx/cyclonedx-library'
import canonicalize from 'canonicalize'
import { beforeAll, describe, expect, inject, it } from 'vitest'
import WebSocket from 'ws'
import { ensureWorkspace } from '../../scripts/db/seed.ts'
import { generateApiKey } from '../../shared/auth/api-keys.ts'
import { openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'
import * as merkle from '../support/independent-merkle.ts'
import {
  verifyCosignatureWithLiboqs,
  verifyDsseWithJwks,
  verifyNoteWithSigstore,
} from '../support/independent-signatures.ts'

const stack = inject('stack')
const url = (p: string) => `${stack.baseUrl}${p}`

async function workspace(name: string) {
  const ownerKey = generateApiKey('live')
  const memberKey = generateApiKey('live')
  useWebSocketConstructor(WebSocket)
  const database = openDatabase(stack.database, { max: 1 })
  try {
    const { tenantId } = await ensureWorkspace(database.db, {
      tenantName: name,
      planId: 'team',
      ownerEmail: `${name.toLowerCase().replaceAll(' ', '-')}-${crypto.randomUUID().slice(0, 8)}@example.test`,
      keys: [
        { name: 'owner', key: ownerKey, role: 'owner' },
        { name: 'member', key: memberKey, role: 'member' },
      ],
    })
    return { tenantId, ownerKey, memberKey }
  } finally {
    await database.close()
  }
}

async function api<T = Record<string, unknown>>(key: string | null, path: string, init: RequestInit = {}) {
  const headers = new Headers(init.headers)
  if (key) headers.set('authorization', `Bearer ${key}`)
  const response = await fetch(url(path), { ...init, headers })
  const text = await response.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {}
  return { status: response.status, headers: response.headers, body: body as T, text }
}

interface Checkpoint {
  origin: string
  tree_size: number
  root_hash: string
  note: string
  verifier_keys: string[]
}

interface LogKeys {
  keys: { alg: 'EdDSA' | 'ML-DSA-44'; public_key: string; state: string }[]
}

let logKeys: { ed25519: Uint8Array; mlDsa44: Uint8Array }

/** Verifies a checkpoint with both independent verifiers; returns its size and root. */
async function verifyCheckpoint(checkpoint: Checkpoint) {
  const head = verifyNoteWithSigstore(checkpoint.note, checkpoint.origin, logKeys.ed25519)
  const cosignature = await verifyCosignatureWithLiboqs(checkpoint.note, checkpoint.origin, logKeys.mlDsa44)
  expect(cosignature.verified).toBe(true)
  expect(head.origin).toBe(checkpoint.origin)
  expect(Number(head.logSize)).toBe(checkpoint.tree_size)
  return { size: BigInt(head.logSize), root: new Uint8Array(head.logHash) }
}

async function inclusionVerifies(key: string, index: number): Promise<boolean> {
  const { status, body } = await api<{
    tree_size: number
    entry: string
    leaf_hash: string
    proof: string[]
    checkpoint: Checkpoint
  }>(key, `/platform/v1/audit-log/proofs/inclusion?index=${index}`)
  expect(status).toBe(200)
  const { size, root } = await verifyCheckpoint(body.checkpoint)
  const leaf = await merkle.leafHashOf(new TextEncoder().encode(body.entry))
  expect(Buffer.from(leaf).toString('base64')).toBe(body.leaf_hash)
  return merkle.verifyInclusionRfc(BigInt(index), size, leaf, body.proof.map(merkle.fromBase64), root)
}

beforeAll(async () => {
  const { status, body } = await api<LogKeys>(null, '/platform/v1/audit-log/keys')
  expect(status).toBe(200)
  const key = (alg: string) =>
    merkle.fromBase64(body.keys.find((k) => k.alg === alg && k.state === 'signing')!.public_key)
  logKeys = { ed25519: key('EdDSA'), mlDsa44: key('ML-DSA-44') }
})

describe('audit log through the gateway', () => {
  it('an enforce block is on the log before the 403 leaves; an audit pass before the request goes on; both readable with proofs', async () => {
    const ws = await workspace('Audit blocks')
    expect(
      (
        await api(ws.ownerKey, '/platform/v1/crypto/policy', {
          method: 'PUT',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ preset: 'strict' }),
        })
      ).status,
    ).toBe(200)
    const blocked = await api<{ error: { code: string } }>(ws.memberKey, '/svc/memories', {
      headers: { 'x-svc-crypto-algorithms': 'rsa-2048' },
    })
    expect(blocked.status).toBe(403)
    const blockedRequestId = blocked.headers.get('x-request-id')

    await api(ws.ownerKey, '/platform/v1/crypto/policy', {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ mode: 'audit' }),
    })
    const passed = await api(ws.memberKey, '/svc/memories', {
      headers: { 'x-svc-crypto-algorithms': 'rsa-2048' },
    })
    expect(passed.status).toBe(200)

    const decisions = await api<{
      checkpoint: Checkpoint
      data: {
        index: number
        outcome: string
        entry: string
        proof: string[]
        decision: { request_id: string }
      }[]
    }>(ws.memberKey, '/platform/v1/crypto/decisions')
    expect(decisions.status).toBe(200)
    expect(decisions.body.data.map((d) => d.outcome)).toEqual(['logged', 'blocked'])
    expect(decisions.body.data[1]!.decision.request_id).toBe(blockedRequestId)
    const { size, root } = await verifyCheckpoint(decisions.body.checkpoint)
    for (const d of decisions.body.data) {
      const leaf = await merkle.leafHashOf(new TextEncoder().encode(d.entry))
      expect(
        await merkle.verifyInclusionRfc(BigInt(d.index), size, leaf, d.proof.map(merkle.fromBase64), root),
      ).toBe(true)
    }

    // The policy changes are on the same log, in order: strict, then audit mode.
    const entries = await api<{ data: { event: { kind: string; mode?: string } }[] }>(
      ws.memberKey,
      '/platform/v1/audit-log/entries',
    )
    expect(entries.body.data.map((e) => e.event.kind)).toEqual([
      'crypto_policy.changed',
      'crypto_policy.decision',
      'crypto_policy.changed',
      'crypto_policy.decision',
    ])
  })

  it('32 parallel audited requests: 32 entries in one tree, every inclusion proof verifies, and the log stays consistent with an earlier checkpoint', async () => {
    const ws = await workspace('Audit concurrency')
    const first = await api(ws.ownerKey, '/platform/v1/crypto/policy', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ preset: 'strict', mode: 'audit' }),
    })
    expect(first.status).toBe(200)
    const earlier = await api<Checkpoint>(ws.ownerKey, '/platform/v1/audit-log/checkpoint', {
      method: 'POST',
    })
    expect(earlier.body.tree_size).toBe(1)
    // One compliant request loads the policy into the gateway's cache first (a cold cache loads it
    // once per concurrent request; that is the gateway's concern, not the log's).
    const warm = await api(ws.memberKey, '/platform/v1/crypto/algorithms', {
      headers: { 'x-svc-crypto-algorithms': 'aes-256-gcm' },
    })
    expect(warm.status).toBe(200)

    const responses = await Promise.all(
      Array.from({ length: 32 }, () =>
        // A route with no database work: the audit log is the only shared resource on the path.
        api(ws.memberKey, '/platform/v1/crypto/algorithms?type=kem', {
          headers: { 'x-svc-crypto-algorithms': 'ecdsa-p256' },
        }),
      ),
    )
    expect(responses.filter((r) => r.status !== 200).map((r) => r.text)).toEqual([])
    const entries = await api<{
      tree_size: number
      data: { index: number; event: { kind: string; request_id: string } }[]
    }>(ws.memberKey, '/platform/v1/audit-log/entries')
    expect(entries.body.tree_size).toBe(33)
    const requestIds = entries.body.data
      .filter((e) => e.event.kind === 'crypto_policy.decision')
      .map((e) => e.event.request_id)
    expect(new Set(requestIds)).toEqual(new Set(responses.map((r) => r.headers.get('x-request-id'))))

    const verdicts = await Promise.all(
      Array.from({ length: 33 }, (_, i) => inclusionVerifies(ws.memberKey, i)),
    )
    expect(verdicts.every(Boolean)).toBe(true)

    const latest = await api<Checkpoint>(ws.memberKey, '/platform/v1/audit-log/checkpoint')
    const later = await verifyCheckpoint(latest.body)
    expect(later.size).toBe(33n)
    const old = await verifyCheckpoint(earlier.body)
    const consistency = await api<{ proof: string[]; second: number }>(
      ws.memberKey,
      `/platform/v1/audit-log/proofs/consistency?first=1&second=33`,
    )
    expect(
      await merkle.verifyConsistencyRfc(
        old.size,
        later.size,
        old.root,
        later.root,
        consistency.body.proof.map(merkle.fromBase64),
      ),
    ).toBe(true)

    // The signed note itself, for tools that speak C2SP.
    const text = await api(ws.memberKey, '/platform/v1/audit-log/checkpoint', {
      headers: { accept: 'text/plain' },
    })
    expect(text.headers.get('content-type')).toMatch(/^text\/plain/)
    expect(text.text).toBe(latest.body.note)
  })

  it('a tenant reads only its own log; the platform log and the keys are readable', async () => {
    const a = await workspace('Log owner')
    const b = await workspace('Log neighbour')
    await api(a.ownerKey, '/platform/v1/crypto/policy', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ preset: 'maximum' }),
    })
    const mine = await api<{ data: { entry: string }[] }>(a.memberKey, '/platform/v1/audit-log/entries')
    const theirs = await api<{ tree_size: number; data: unknown[] }>(
      b.memberKey,
      '/platform/v1/audit-log/entries',
    )
    expect(mine.body.data).toHaveLength(1)
    expect(mine.body.data[0]!.entry).toContain(a.tenantId)
    expect(theirs.body).toMatchObject({ tree_size: 0, data: [] })
    const cross = await api(b.memberKey, `/platform/v1/audit-log/entries?tenantId=${a.tenantId}`)
    expect(cross.status).toBe(403)
    const platform = await api<{ data: { event: { kind: string } }[] }>(
      b.memberKey,
      '/platform/v1/audit-log/entries?log=platform',
    )
    expect(platform.status).toBe(200)
    expect((await api(null, '/platform/v1/audit-log/entries')).status).toBe(401)
  })

  it('service-account lifecycle and token issuance are logged before they are answered', async () => {
    const ws = await workspace('Audit tokens')
    const created = await api<{ id: string; secret: string }>(ws.ownerKey, '/platform/v1/service-accounts', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ci', audiences: ['internal-service'] }),
    })
    expect(created.status).toBe(201)
    const token = await api<{ access_token: string }>(null, '/auth/service-token', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: created.body.id, client_secret: created.body.secret }),
    })
    expect(token.status).toBe(200)
    const entries = await api<{ data: { event: Record<string, unknown> }[] }>(
      ws.memberKey,
      '/platform/v1/audit-log/entries',
    )
    const [sa, issued] = entries.body.data.map((e) => e.event)
    expect(sa).toMatchObject({
      kind: 'service_account.changed',
      action: 'created',
      service_account_id: created.body.id,
    })
    const jti = JSON.parse(Buffer.from(token.body.access_token.split('.')[1]!, 'base64url').toString()).jti
    expect(issued).toMatchObject({
      kind: 'token.issued',
      subject: `sa:${created.body.id}`,
      grant: 'client_credentials',
      token_id: jti,
    })
    expect(JSON.stringify(entries.body)).not.toContain(created.body.secret)
    // Issuing with a key set records that key set on the platform's log (once per set).
    const platform = await api<{
      data: { event: { kind: string; purpose?: string; keys?: { kid: string }[] } }[]
    }>(ws.memberKey, '/platform/v1/audit-log/entries?log=platform')
    const keySets = platform.body.data.filter(
      (e) => e.event.kind === 'signing_keys.changed' && e.event.purpose === 'access_tokens',
    )
    expect(keySets).toHaveLength(1)
    const kid = JSON.parse(Buffer.from(token.body.access_token.split('.')[0]!, 'base64url').toString()).kid
    expect(keySets[0]!.event.keys!.map((k) => k.kid)).toContain(kid)
  })
})

describe('CBOM, compliance and attestation', () => {
  it('the CBOM is valid CycloneDX 1.6 (strict), names the pinned libraries and the live keys, and no private material', async () => {
    const ws = await workspace('CBOM')
    const cbom = await api<Record<string, unknown> & { components: Record<string, unknown>[] }>(
      ws.memberKey,
      '/platform/v1/crypto/cbom',
    )
    expect(cbom.status).toBe(200)
    expect(cbom.headers.get('content-type')).toBe('application/vnd.cyclonedx+json')
    const validator = new Validation.JsonStrictValidator(Spec.Version.v1dot6)
    expect(await validator.validate(cbom.text)).toBeNull()
    expect(cbom.headers.get('x-svc-cbom-digest')).toBe(
      `sha384:${createHash('sha384').update(cbom.text).digest('hex')}`,
    )

    const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8')) as {
      packages: Record<string, { version: string; integrity: string }>
    }
    const pq = cbom.body.components.find((c) => c.name === 'post-quantum' && c.group === '@noble')!
    const pinned = lock.packages['node_modules/@noble/post-quantum']!
    expect(pq.version).toBe(pinned.version)
    expect((pq.hashes as { content: string }[])[0]!.content).toBe(
      Buffer.from(pinned.integrity.replace(/^sha512-/, ''), 'base64').toString('hex'),
    )
    const mlDsa65 = cbom.body.components.find((c) => c.name === 'ML-DSA-65') as {
      cryptoProperties: Record<string, unknown>
    }
    expect(mlDsa65.cryptoProperties).toMatchObject({
      assetType: 'algorithm',
      oid: '2.16.840.1.101.3.4.3.18',
      algorithmProperties: { primitive: 'signature', nistQuantumSecurityLevel: 3 },
    })
    const jwks = await api<{ keys: { kid: string }[] }>(null, '/.well-known/jwks.json')
    const keyIds = cbom.body.components
      .filter(
        (c) =>
          (c.cryptoProperties as { assetType?: string } | undefined)?.assetType === 'related-crypto-material',
      )
      .map(
        (c) =>
          (c.cryptoProperties as { relatedCryptoMaterialProperties: { id: string } })
            .relatedCryptoMaterialProperties.id,
      )
    for (const key of jwks.body.keys) expect(keyIds).toContain(key.kid)
    expect(cbom.text).not.toMatch(/"(priv|d)":/)
  })

  it('compliance reports CNSA 2.0 and FIPS 140-3 per requirement, honestly', async () => {
    const ws = await workspace('Compliance')
    const report = await api<{
      validated_module: boolean
      frameworks: { framework: string; requirements: { id: string; status: string; evidence: unknown[] }[] }[]
    }>(ws.memberKey, '/platform/v1/crypto/compliance')
    expect(report.status).toBe(200)
    expect(report.body.validated_module).toBe(false)
    const fips = report.body.frameworks.find((f) => f.framework === 'FIPS 140-3')!
    expect(fips.requirements.find((r) => r.id === 'fips140-3-validated-module')?.status).toBe('not_met')
    const cnsa = report.body.frameworks.find((f) => f.framework === 'CNSA 2.0')!
    // Default preset: tokens may be ML-DSA-65 or EdDSA, so ML-DSA-87-only is not met.
    expect(cnsa.requirements.find((r) => r.id === 'cnsa2-signatures')?.status).not.toBe('met')
    for (const r of [...fips.requirements, ...cnsa.requirements]) {
      expect(['met', 'partially_met', 'not_met', 'not_applicable']).toContain(r.status)
    }
    await api(ws.ownerKey, '/platform/v1/crypto/policy', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ preset: 'government' }),
    })
    const after = await api<typeof report.body>(ws.memberKey, '/platform/v1/crypto/compliance')
    const signatures = after.body.frameworks[0]!.requirements.find((r) => r.id === 'cnsa2-signatures')
    expect(signatures?.status).toBe('met')
  })

  it('the attestation verifies independently: DSSE PAE rebuilt here, ML-DSA-65 and Ed25519 against the public JWKS, subjects recomputed, and it is on the log', async () => {
    const ws = await workspace('Attestation')
    const policy = await api<{ policy: unknown; attestation: { href: string; policy_digest: string } }>(
      ws.memberKey,
      '/platform/v1/crypto/policy',
    )
    expect(policy.body.attestation.href).toBe('/platform/v1/crypto/attestation')
    const attestation = await api<{
      envelope: { payloadType: string; payload: string; signatures: { keyid: string; sig: string }[] }
      audit_log: { index: number; checkpoint: Checkpoint }
    }>(ws.memberKey, policy.body.attestation.href)
    expect(attestation.status).toBe(200)
    const jwks = await api<{ keys: { kty: string; alg: string; kid: string; pub?: string; x?: string }[] }>(
      null,
      '/.well-known/jwks.json',
    )
    expect((await verifyDsseWithJwks(attestation.body.envelope, jwks.body)).sort()).toEqual([
      'EdDSA',
      'ML-DSA-65',
    ])
    expect(attestation.body.envelope.payloadType).toBe('application/vnd.in-toto+json')

    const statement = JSON.parse(Buffer.from(attestation.body.envelope.payload, 'base64').toString()) as {
      _type: string
      subject: { name: string; digest: Record<string, string> }[]
      predicate: Record<string, unknown> & {
        audit_log: { checkpoint: string }
        self_tests: { acvp_revisions: string[] }
      }
    }
    expect(statement._type).toBe('https://in-toto.io/Statement/v1')
    const policyDigest = createHash('sha384').update(canonicalize(policy.body.policy)!).digest('hex')
    expect(policy.body.attestation.policy_digest).toBe(`sha384:${policyDigest}`)
    expect(statement.subject).toContainEqual({
      name: `crypto-policy:${ws.tenantId}`,
      digest: { sha384: policyDigest },
    })
    const cbom = await api(ws.memberKey, '/platform/v1/crypto/cbom')
    expect(statement.subject).toContainEqual({
      name: `cbom:${ws.tenantId}`,
      digest: { sha384: createHash('sha384').update(cbom.text).digest('hex') },
    })
    // The code that runs: one subject per worker, the SHA-256 of the bundle the stack loaded,
    // recomputed here from the files themselves.
    const buildDir = path.join(stack.dataDir, 'build')
    const built = readdirSync(buildDir).sort()
    expect(built).toContain('svc-gateway')
    expect(built).toContain('svc-platform')
    expect(
      statement.subject
        .filter((s) => s.name.startsWith('worker:'))
        .sort((a, b) => a.name.localeCompare(b.name)),
    ).toEqual(
      built.map((worker) => ({
        name: `worker:${worker}`,
        digest: {
          sha256: createHash('sha256')
            .update(readFileSync(path.join(buildDir, worker, 'index.js')))
            .digest('hex'),
        },
      })),
    )
    expect(statement.predicate).toMatchObject({
      signing: {
        jwks_url: `${stack.baseUrl}/.well-known/jwks.json`,
        keys: attestation.body.envelope.signatures.map((s, i) => ({
          alg: ['ML-DSA-65', 'EdDSA'][i],
          kid: s.keyid,
        })),
      },
      self_tests: { acvp_revisions: ['FIPS203', 'FIPS204', 'FIPS205'] },
    })
    const checkpointHead = await verifyCheckpoint({
      ...attestation.body.audit_log.checkpoint,
      note: statement.predicate.audit_log.checkpoint,
    })
    expect(checkpointHead.size).toBeGreaterThanOrEqual(0n)

    // The attestation itself is an entry of the workspace log, with a verifiable proof.
    const entry = await api<{ data: { event: { kind: string; statement_digest: string } }[] }>(
      ws.memberKey,
      `/platform/v1/audit-log/entries?start=${attestation.body.audit_log.index}`,
    )
    expect(entry.body.data[0]!.event).toMatchObject({
      kind: 'attestation.issued',
      statement_digest: `sha256:${createHash('sha256').update(Buffer.from(attestation.body.envelope.payload, 'base64')).digest('hex')}`,
    })
    expect(await inclusionVerifies(ws.memberKey, attestation.body.audit_log.index)).toBe(true)
  })
})

describe('public trust pages', () => {
  it('conformance evidence: HTML for people, JSON for machines, no credential', async () => {
    const json = await api<{
      validated_module: boolean
      vector_sets: { id: string; cases: number }[]
      runtime_self_tests: { status: string }
    }>(null, '/trust/conformance', { headers: { accept: 'application/json' } })
    expect(json.status).toBe(200)
    expect(json.headers.get('cache-control')).toBe('public, max-age=60')
    expect(json.body.validated_module).toBe(false)
    expect(json.body.vector_sets.find((v) => v.id === 'transparency-dev-merkle')?.cases).toBe(518)
    expect(['passed', 'pending']).toContain(json.body.runtime_self_tests.status)
    const html = await api(null, '/trust/conformance')
    expect(html.headers.get('content-type')).toMatch(/^text\/html/)
    expect(html.text).toContain('<h1>Conformance evidence</h1>')
  })

  it('entropy chain: from the runtime CSPRNG to every key and nonce', async () => {
    const json = await api<{ chain: { step: string }[]; consumers: { what: string }[] }>(
      null,
      '/trust/entropy?format=json',
    )
    expect(json.status).toBe(200)
    expect(json.body.chain.map((s) => s.step)).toEqual(['host', 'runtime', 'libraries'])
    expect(json.body.consumers.map((c) => c.what).join(' ')).toMatch(/API keys.*ML-DSA signing keys/s)
    const html = await api(null, '/trust/entropy')
    expect(html.text).toContain('<h1>Entropy chain</h1>')
  })
})
