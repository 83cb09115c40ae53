/**
 * The crypto-policy front door end to end: the algorithm registry, the policy admin API and its
 * validation, the check endpoint, and enforcement at the gateway (token algorithm and declared
 * algorithms) in audit and enforce mode on the same request. Each policy scenario runs in its own
 * workspace, so no other test sees a changed policy.
 */
import { decodeProtectedHeader } from 'jose'
import { beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { ensureWorkspace } from '../../scripts/db/seed.ts'
import { setUserPassword } from '../../scripts/db/user-passwords.ts'
import { generateApiKey } from '../../shared/auth/api-keys.ts'
import { openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'
import { fileStack } from './file-stack.ts'

const stack = await fileStack()
const url = (p: string) => `${stack.baseUrl}${p}`

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string }
  crypto_policy?: {
    algorithm: string
    context: string
    mode: string
    rules: { rule: string; detail: string }[]
  }
  policy_problems?: string[]
}

interface Workspace {
  tenantId: string
  ownerKey: string
  memberKey: string
  email: string
  password: string
}

async function workspace(name: string): Promise<Workspace> {
  const ownerKey = generateApiKey('live')
  const memberKey = generateApiKey('live')
  const email = `${name.toLowerCase().replaceAll(' ', '-')}-${crypto.randomUUID().slice(0, 8)}@example.test`
  const password = `a long passphrase for ${name}`
  useWebSocketConstructor(WebSocket)
  const database = openDatabase(stack.database, { max: 1 })
  try {
    const { tenantId } = await ensureWorkspace(database.db, {
      tenantName: name,
      planId: 'team',
      ownerEmail: email,
      keys: [
        { name: 'owner', key: ownerKey, role: 'owner' },
        { name: 'member', key: memberKey, role: 'member' },
      ],
    })
    await setUserPassword(database.db, email, password)
    return { tenantId, ownerKey, memberKey, email, password }
  } finally {
    await database.close()
  }
}

const auth = (credential: string, extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${credential}`,
  ...extra,
})

async function send(
  method: string,
  p: string,
  credential: string,
  body?: unknown,
  extra: Record<string, string> = {},
) {
  return fetch(url(p), {
    method,
    headers: auth(credential, body === undefined ? extra : { 'content-type': 'application/json', ...extra }),
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
}

async function json<T>(res: Response, status = 200): Promise<T> {
  const text = await res.text()
  expect(res.status, text).toBe(status)
  return JSON.parse(text) as T
}

async function login(ws: Workspace, alg?: string) {
  return fetch(url('/auth/login'), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'cf-connecting-ip': `2001:db8::c:${crypto.randomUUID().slice(0, 4)}`,
    },
    body: JSON.stringify({ email: ws.email, password: ws.password, ...(alg ? { alg } : {}) }),
  })
}

interface Violation {
  algorithm: string
  context: string
  mode: string
  blocked: boolean
  path: string
  principal: string
}

async function violationsOf(ws: Workspace, count: number): Promise<Violation[]> {
  // Violations are written after the response (waitUntil): wait for them.
  for (let i = 0; i < 50; i++) {
    const list = await json<{ data: Violation[] }>(
      await send('GET', '/platform/v1/crypto/violations', ws.ownerKey),
    )
    if (list.data.length >= count) return list.data
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`fewer than ${count} violations recorded`)
}

describe(`algorithm registry (${stack.kind})`, () => {
  const registry = (query: string) =>
    send('GET', `/platform/v1/crypto/algorithms${query}`, stack.tenantA.liveKey)

  it("lists the spec's tables with standard names, OIDs and security levels", async () => {
    const { data } = await json<{ data: Record<string, unknown>[] }>(await registry(''))
    const spec = data.filter((e) => e.source === 'spec').map((e) => e.id)
    expect(spec).toEqual([
      'kyber-512',
      'kyber-768',
      'kyber-1024',
      'dilithium-2',
      'dilithium-3',
      'dilithium-5',
      'sphincs-shake-128f-simple',
      'sphincs-shake-256f-simple',
      'falcon-512',
      'falcon-1024',
      'rsa-2048',
      'rsa-4096',
      'ecdsa-p256',
      'ecdsa-p384',
    ])
    expect(data.find((e) => e.id === 'dilithium-3')).toMatchObject({
      standardName: 'ML-DSA-65',
      type: 'signature',
      status: 'NIST_FINAL',
      securityLevel: 3,
      oid: '2.16.840.1.101.3.4.3.18',
    })
    expect(data.some((e) => e.type === 'symmetric')).toBe(true)
    expect(data.some((e) => e.type === 'hash')).toBe(true)
  })

  it('filters by status and type, case-insensitively', async () => {
    const nistSignatures = await json<{ data: { id: string }[] }>(
      await registry('?status=NIST_FINAL&type=signature'),
    )
    expect(nistSignatures.data.map((e) => e.id)).toEqual([
      'dilithium-2',
      'dilithium-3',
      'dilithium-5',
      'sphincs-shake-128f-simple',
      'sphincs-shake-256f-simple',
    ])
    const drafts = await json<{ data: { id: string }[] }>(await registry('?status=draft'))
    expect(drafts.data.map((e) => e.id)).toEqual(['falcon-512', 'falcon-1024'])
    const deprecated = await json<{ data: { id: string; replacement: string; deprecationDate: string }[] }>(
      await registry('?status=deprecated&type=signature'),
    )
    expect(deprecated.data.find((e) => e.id === 'rsa-2048')).toMatchObject({
      replacement: 'dilithium-2',
      deprecationDate: '2030-01-01',
    })
    const kems = await json<{ data: { type: string }[] }>(await registry('?type=KEM'))
    expect(new Set(kems.data.map((e) => e.type))).toEqual(new Set(['kem']))
  })

  it('answers an unknown filter value with 400 naming the allowed values', async () => {
    const res = await registry('?status=final')
    const body = await json<ErrorBody>(res, 400)
    expect(body.error.code).toBe('invalid_algorithm_filter')
    expect(body.error.message).toContain('NIST_FINAL, DRAFT, DEPRECATED')
  })
})

describe(`policy admin API (${stack.kind})`, () => {
  let ws: Workspace
  beforeAll(async () => {
    ws = await workspace('Policy admin')
  })

  it('starts on the Default preset, with an attestation reference', async () => {
    const policy = await json<Record<string, unknown>>(
      await send('GET', '/platform/v1/crypto/policy', ws.memberKey),
    )
    expect(policy).toMatchObject({
      object: 'crypto_policy',
      tenant_id: ws.tenantId,
      preset: 'default',
      customized: false,
      source: 'default',
      policy: { enabled: true, mode: 'audit', minimumSecurityLevel: 1, allowClassicalFallback: true },
      token_algorithms: { accepted: ['ML-DSA-44', 'ML-DSA-65', 'ML-DSA-87', 'EdDSA'] },
      attestation: { href: '/platform/v1/crypto/attestation' },
    })
    expect((policy.attestation as { policy_digest: string }).policy_digest).toMatch(/^sha384:[0-9a-f]{96}$/)
  })

  it('every link the policy advertises answers 200, none is a 501 placeholder', async () => {
    const policy = await json<unknown>(await send('GET', '/platform/v1/crypto/policy', ws.memberKey))
    const hrefs: string[] = []
    const collect = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(collect)
      else if (value && typeof value === 'object') {
        for (const [key, inner] of Object.entries(value)) {
          if (key === 'href' && typeof inner === 'string') hrefs.push(inner)
          else collect(inner)
        }
      }
    }
    collect(policy)
    expect(hrefs).toEqual(['/platform/v1/crypto/attestation'])
    for (const href of hrefs) {
      const res = await send('GET', href, ws.memberKey)
      expect(res.status, `${href}: ${await res.text()}`).toBe(200)
    }
  })

  it('sets a preset, a preset with overrides, and refuses members', async () => {
    const strict = await json<Record<string, unknown>>(
      await send('PUT', '/platform/v1/crypto/policy', ws.ownerKey, { preset: 'Strict' }),
    )
    expect(strict).toMatchObject({
      preset: 'strict',
      customized: false,
      source: 'stored',
      policy: {
        mode: 'enforce',
        minimumSecurityLevel: 3,
        requireNistFinal: true,
        allowClassicalFallback: false,
      },
      token_algorithms: { accepted: ['ML-DSA-65', 'ML-DSA-87'] },
    })
    expect(strict.updated_by).toMatch(/^key:/)
    const audited = await json<Record<string, unknown>>(
      await send('PUT', '/platform/v1/crypto/policy', ws.ownerKey, { preset: 'strict', mode: 'audit' }),
    )
    expect(audited).toMatchObject({ preset: 'strict', customized: true, policy: { mode: 'audit' } })
    const refused = await send('PATCH', '/platform/v1/crypto/policy', ws.memberKey, { mode: 'enforce' })
    expect((await json<ErrorBody>(refused, 403)).error.code).toBe('insufficient_role')
  })

  it('refuses contradictory settings, naming every problem', async () => {
    await send('PUT', '/platform/v1/crypto/policy', ws.ownerKey, { preset: 'strict' })
    const res = await send('PATCH', '/platform/v1/crypto/policy', ws.ownerKey, {
      minimumSecurityLevel: 5,
      forbiddenAlgorithms: ['dilithium-5'],
    })
    const body = await json<ErrorBody>(res, 400)
    expect(body.error.code).toBe('crypto_policy_contradiction')
    expect(body.policy_problems).toEqual(
      expect.arrayContaining([
        'dilithium-5 is both allowed (allowedSignatureAlgorithms) and forbidden',
        'kyber-768 (security level 3) is allowed but minimumSecurityLevel is 5',
      ]),
    )
    // Nothing changed.
    const current = await json<{ policy: { minimumSecurityLevel: number } }>(
      await send('GET', '/platform/v1/crypto/policy', ws.ownerKey),
    )
    expect(current.policy.minimumSecurityLevel).toBe(3)
  })

  it('says what is missing or unknown', async () => {
    const incomplete = await json<ErrorBody>(
      await send('PUT', '/platform/v1/crypto/policy', ws.ownerKey, { mode: 'audit' }),
      400,
    )
    expect(incomplete.error.code).toBe('incomplete_crypto_policy')
    expect(incomplete.error.message).toContain('allowedKemAlgorithms')
    const preset = await json<ErrorBody>(
      await send('PUT', '/platform/v1/crypto/policy', ws.ownerKey, { preset: 'paranoid' }),
      400,
    )
    expect(preset.error.code).toBe('unknown_policy_preset')
    const unknownField = await json<ErrorBody>(
      await send('PATCH', '/platform/v1/crypto/policy', ws.ownerKey, { allowRot13: true }),
      400,
    )
    expect(unknownField.error.message).toContain('allowRot13')
  })

  it('checks one algorithm: the decision, the rules, the mode and what enforce would do', async () => {
    await send('PUT', '/platform/v1/crypto/policy', ws.ownerKey, { preset: 'strict', mode: 'audit' })
    const check = (q: string) => send('GET', `/platform/v1/crypto/policy/check?${q}`, ws.memberKey)
    const allowed = await json<Record<string, unknown>>(
      await check('algorithm=ML-DSA-65&context=token_signature'),
    )
    expect(allowed).toMatchObject({
      algorithm: 'dilithium-3',
      allowed: true,
      outcome: 'allowed',
      mode: 'audit',
    })
    const classical = await json<{ rules: { rule: string; passed: boolean }[] } & Record<string, unknown>>(
      await check('algorithm=EdDSA&context=token_signature'),
    )
    expect(classical).toMatchObject({
      algorithm: 'ed25519',
      allowed: false,
      decision: 'violation',
      enforced: false,
      outcome: 'logged',
      in_enforce_mode: 'blocked',
    })
    expect(classical.rules.filter((r) => !r.passed).map((r) => r.rule)).toEqual([
      'forbidden_list',
      'allow_list',
      'nist_final',
      'classical_fallback',
    ])
    const hybrid = await json<Record<string, unknown>>(
      await check('algorithm=X25519MLKEM768&context=key_exchange'),
    )
    expect(hybrid).toMatchObject({ algorithm: 'x25519+kyber-768', hybrid: true, allowed: true })
    const unknown = await json<ErrorBody>(await check('algorithm=rot13&context=hashing'), 400)
    expect(unknown.error.code).toBe('unknown_algorithm')
    const context = await json<ErrorBody>(await check('algorithm=aes-256-gcm&context=tls'), 400)
    expect(context.error.code).toBe('invalid_policy_context')
    expect(context.error.message).toContain('request_declared')
    const mismatch = await json<ErrorBody>(await check('algorithm=aes-256-gcm&context=token_signature'), 400)
    expect(mismatch.error.code).toBe('algorithm_context_mismatch')
  })
})

describe(`enforcement at the gateway: audit vs enforce on the same request (${stack.kind})`, () => {
  let ws: Workspace
  beforeAll(async () => {
    ws = await workspace('Enforcement')
    await json(
      await send('PUT', '/platform/v1/crypto/policy', ws.ownerKey, { preset: 'strict', mode: 'audit' }),
    )
  })

  it('audit passes and records; enforce blocks with 403 naming the algorithm and the rule', async () => {
    // An EdDSA token: Strict does not allow classical signatures, but audit mode lets it be issued.
    const issued = await json<{ access_token: string; alg: string }>(await login(ws, 'EdDSA'))
    expect(issued.alg).toBe('EdDSA')
    expect(decodeProtectedHeader(issued.access_token).alg).toBe('EdDSA')
    const declared = { 'x-svc-crypto-algorithms': 'x25519, aes-256-gcm' }

    // Audit: both the token's algorithm and the declared classical KEM pass.
    expect((await send('GET', '/platform/v1/crypto/policy', issued.access_token)).status).toBe(200)
    expect((await send('GET', '/svc/memories', ws.ownerKey, undefined, declared)).status).toBe(200)

    // Enforce: the very same requests are blocked.
    await json(await send('PATCH', '/platform/v1/crypto/policy', ws.ownerKey, { mode: 'enforce' }))
    const blockedToken = await json<ErrorBody>(
      await send('GET', '/platform/v1/crypto/policy', issued.access_token),
      403,
    )
    expect(blockedToken.error.code).toBe('crypto_policy_violation')
    expect(blockedToken.error.message).toContain('ed25519')
    expect(blockedToken.crypto_policy).toMatchObject({
      algorithm: 'ed25519',
      context: 'token_signature',
      mode: 'enforce',
    })
    expect(blockedToken.crypto_policy?.rules.map((r) => r.rule)).toContain('classical_fallback')
    // The advice names what Strict allows (the registry's own replacement, dilithium-2, is level 2).
    expect(blockedToken.error.message).toContain('use dilithium-3')
    expect(blockedToken.error.message).not.toContain('dilithium-2')

    const blockedDeclared = await json<ErrorBody>(
      await send('GET', '/svc/memories', ws.ownerKey, undefined, declared),
      403,
    )
    expect(blockedDeclared.error.param).toBe('x-svc-crypto-algorithms')
    expect(blockedDeclared.crypto_policy).toMatchObject({ algorithm: 'x25519', context: 'request_declared' })

    // ML-DSA-65 tokens and compliant declarations pass in enforce mode.
    const compliant = await json<{ access_token: string; alg: string }>(await login(ws))
    expect(compliant.alg).toBe('ML-DSA-65')
    const ok = await send('GET', '/svc/memories', compliant.access_token, undefined, {
      'x-svc-crypto-algorithms': 'x25519+kyber-768, aes-256-gcm',
    })
    expect(ok.status).toBe(200)
    // Asking for an EdDSA token is now refused at issuance too.
    const refusedIssue = await json<ErrorBody>(await login(ws, 'EdDSA'), 403)
    expect(refusedIssue.error.code).toBe('crypto_policy_violation')

    // Every violation is recorded, the audited ones as passed and the enforced ones as blocked.
    const recorded = await violationsOf(ws, 6)
    const summary = recorded.map(
      (v) => `${v.path} ${v.algorithm} ${v.mode} ${v.blocked ? 'blocked' : 'passed'}`,
    )
    expect(summary.sort()).toEqual([
      '/auth/login ed25519 audit passed', // the EdDSA token was issued
      '/auth/login ed25519 enforce blocked', // and later refused
      '/platform/v1/crypto/policy ed25519 audit passed',
      '/platform/v1/crypto/policy ed25519 enforce blocked',
      '/svc/memories x25519 audit passed',
      '/svc/memories x25519 enforce blocked',
    ])
    expect(recorded.find((v) => v.mode === 'audit' && v.context === 'request_declared')?.path).toBe(
      '/svc/memories',
    )
  })

  it('a Maximum workspace gets ML-DSA-87 tokens, and nothing weaker', async () => {
    const max = await workspace('Maximum')
    await json(await send('PUT', '/platform/v1/crypto/policy', max.ownerKey, { preset: 'maximum' }))
    const token = await json<{ access_token: string; alg: string }>(await login(max))
    expect(token.alg).toBe('ML-DSA-87')
    expect((await send('GET', '/svc/memories', token.access_token)).status).toBe(200)
    const weaker = await json<ErrorBody>(await login(max, 'ML-DSA-65'), 403)
    expect(weaker.crypto_policy).toMatchObject({ algorithm: 'dilithium-3' })
    expect(weaker.crypto_policy?.rules.map((r) => r.rule)).toEqual(['allow_list', 'minimum_security_level'])
  })

  it('a Government workspace requires hybrid key exchange for declared KEMs', async () => {
    const gov = await workspace('Government')
    await json(await send('PUT', '/platform/v1/crypto/policy', gov.ownerKey, { preset: 'government' }))
    const hybrid = await send('GET', '/svc/memories', gov.ownerKey, undefined, {
      'x-svc-crypto-algorithms': 'x25519+kyber-1024',
    })
    expect(hybrid.status).toBe(200)
    const lone = await json<ErrorBody>(
      await send('GET', '/svc/memories', gov.ownerKey, undefined, {
        'x-svc-crypto-algorithms': 'kyber-1024',
      }),
      403,
    )
    expect(lone.crypto_policy?.rules.map((r) => r.rule)).toEqual(['hybrid_mode'])
    const unknown = await json<ErrorBody>(
      await send('GET', '/svc/memories', gov.ownerKey, undefined, { 'x-svc-crypto-algorithms': 'rot13' }),
      400,
    )
    expect(unknown.error).toMatchObject({ code: 'unknown_algorithm', param: 'x-svc-crypto-algorithms' })
  })
})
