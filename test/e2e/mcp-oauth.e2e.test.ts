/**
 * The OAuth 2.1 authorization server as MCP clients use it, against the stack started with
 * `npm start`: the official SDK client completes the whole flow unattended (discovery from the
 * 401, dynamic registration, authorization with PKCE — the login and consent page answered
 * programmatically —, token, tool call, refresh), then the negative cases each get their RFC's
 * error: wrong PKCE verifier, reused code, redirect URI mismatch, a token for another resource,
 * expired tokens, refresh-token reuse, and insufficient scope.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
} from '@modelcontextprotocol/client'
import {
  discoverAuthorizationServerMetadata,
  type OAuthClientProvider,
  refreshAuthorization,
  UnauthorizedError,
} from '@modelcontextprotocol/sdk/client/auth.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'
import { inArray } from 'drizzle-orm'
import { decodeJwt } from 'jose'
import { beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { buildAccessTokenClaims, signAccessToken } from '../../shared/crypto/access-token.ts'
import { base64urlEncode, utf8 } from '../../shared/crypto/encoding.ts'
import { importSigningKey, type SigningKey } from '../../shared/crypto/jwk.ts'
import { openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'
import { oauthClients } from '../../shared/db/schema.ts'
import { fileStack } from './file-stack.ts'

const stack = await fileStack({ login: true })
const BASE = stack.baseUrl
const MCP_URL = new URL(`${BASE}/mcp`)
const RESOURCE = `${BASE}/mcp`
const REDIRECT = 'http://127.0.0.1:33418/oauth/callback'
/** The person who signs in at the consent page: the owner of this file's workspace. */
const owner = stack.tenantA

/** Its own client address per request, so the login throttle's per-address counter never trips across tests. */
const address = () => `2001:db8::${crypto.randomUUID().slice(0, 4)}:${crypto.randomUUID().slice(0, 4)}`

/**
 * The person at the consent page, played by the test: loads the page the client sent the browser
 * to, then posts it back as a browser would (the page's parameters, email, password, workspace,
 * Allow) and returns where the server redirects.
 */
async function consent(authorizationUrl: URL | string, answer: Record<string, string> = {}): Promise<URL> {
  const page = await fetch(authorizationUrl, { redirect: 'manual' })
  expect(page.status, await page.clone().text()).toBe(200)
  expect(page.headers.get('content-type')).toMatch(/^text\/html/)
  expect(page.headers.get('x-frame-options')).toBe('DENY')
  const html = await page.text()
  const form = new URLSearchParams()
  for (const [, name, value] of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    form.set(
      name!,
      value!.replace(/&#(\d+);/g, (_, c: string) => String.fromCharCode(Number(c))),
    )
  }
  form.set('email', owner.ownerEmail)
  form.set('password', owner.ownerPassword)
  form.set('tenant_id', stack.tenantA.id)
  form.set('decision', 'allow')
  for (const [name, value] of Object.entries(answer)) form.set(name, value)
  const res = await fetch(`${BASE}/oauth/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'cf-connecting-ip': address() },
    body: form,
  })
  expect(res.status, await res.clone().text()).toBe(302)
  return new URL(res.headers.get('location')!)
}

/** An OAuthClientProvider kept in memory: what an MCP host stores between runs. */
class MemoryProvider implements OAuthClientProvider {
  client: OAuthClientInformationFull | undefined
  saved: OAuthTokens | undefined
  verifier = ''
  authorizationUrl: URL | undefined
  readonly redirectUrl = REDIRECT
  readonly clientMetadata = {
    client_name: 'svc e2e MCP host',
    redirect_uris: [REDIRECT],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  }
  clientInformation() {
    return this.client
  }
  saveClientInformation(info: OAuthClientInformationFull) {
    this.client = info
  }
  tokens() {
    return this.saved
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier
  }
  codeVerifier() {
    return this.verifier
  }
}

async function form(pathname: string, body: Record<string, string>) {
  const res = await fetch(`${BASE}${pathname}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(body),
  })
  return { status: res.status, body: (await res.json()) as Record<string, string> }
}

/** A registration from `from` (by default an address of its own: registrations are throttled per address). */
const registration = (body: unknown, from = address()) =>
  fetch(`${BASE}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'cf-connecting-ip': from },
    body: JSON.stringify(body),
  })

async function register(redirectUris = [REDIRECT]): Promise<string> {
  const res = await registration({ client_name: 'negative cases', redirect_uris: redirectUris })
  expect(res.status).toBe(201)
  return ((await res.json()) as { client_id: string }).client_id
}

async function pkce() {
  const verifier = base64urlEncode(crypto.getRandomValues(new Uint8Array(48)))
  const challenge = base64urlEncode(
    new Uint8Array(await crypto.subtle.digest('SHA-256', utf8.encode(verifier))),
  )
  return { verifier, challenge }
}

function authorizeUrl(params: Record<string, string>): string {
  return `${BASE}/oauth/authorize?${new URLSearchParams({ response_type: 'code', redirect_uri: REDIRECT, code_challenge_method: 'S256', resource: RESOURCE, state: 'st-1', ...params })}`
}

/** A code for `clientId` through the page, and its verifier. */
async function authorizationCode(clientId: string, extra: Record<string, string> = {}) {
  const { verifier, challenge } = await pkce()
  const back = await consent(authorizeUrl({ client_id: clientId, code_challenge: challenge, ...extra }))
  expect(back.searchParams.get('state')).toBe('st-1')
  expect(back.searchParams.get('iss')).toBe(BASE)
  return { code: back.searchParams.get('code')!, verifier }
}

async function exchange(
  clientId: string,
  code: string,
  verifier: string,
  extra: Record<string, string> = {},
) {
  return form('/oauth/token', {
    grant_type: 'authorization_code',
    client_id: clientId,
    code,
    code_verifier: verifier,
    redirect_uri: REDIRECT,
    resource: RESOURCE,
    ...extra,
  })
}

const mcpPing = (token: string) =>
  fetch(MCP_URL, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'models_list', arguments: {} },
    }),
  })

let signers: Record<string, SigningKey>

beforeAll(async () => {
  const jwks = JSON.parse(readFileSync(path.join(stack.dataDir, 'signing-keys.json'), 'utf8')) as unknown[]
  const keys = await Promise.all(jwks.map((k) => importSigningKey(k)))
  signers = Object.fromEntries(keys.map((k) => [k.alg, k]))
})

describe(`OAuth for MCP clients, completed unattended by the SDK client (${stack.kind})`, () => {
  it('discovery from the 401, registration, authorization with PKCE, token, tool call, refresh', async () => {
    const provider = new MemoryProvider()
    const client = new Client({ name: 'svc-e2e-oauth', version: '1.0.0' })
    const transport = new StreamableHTTPClientTransport(MCP_URL, { authProvider: provider })
    await expect(client.connect(transport)).rejects.toBeInstanceOf(UnauthorizedError)
    // The SDK followed the challenge to the metadata, registered, and sent the "browser" here.
    expect(provider.client?.client_id).toMatch(/^svc_oc_/)
    const url = provider.authorizationUrl!
    expect(url.origin + url.pathname).toBe(`${BASE}/oauth/authorize`)
    expect(url.searchParams.get('code_challenge_method')).toBe('S256')
    expect(url.searchParams.get('resource')).toBe(RESOURCE)
    const back = await consent(url)
    expect(back.origin + back.pathname).toBe(REDIRECT)
    await transport.finishAuth(back.searchParams.get('code')!)
    const tokens = provider.saved!
    expect(tokens).toMatchObject({ token_type: 'Bearer', scope: 'mcp:tools mcp:resources' })
    // The product's own access token: post-quantum signed, bound to the MCP resource.
    const claims = decodeJwt(tokens.access_token)
    expect(claims).toMatchObject({
      aud: RESOURCE,
      tenant_id: stack.tenantA.id,
      client_id: provider.client!.client_id,
    })
    expect(
      JSON.parse(atob(tokens.access_token.split('.')[0]!.replace(/-/g, '+').replace(/_/g, '/'))).alg,
    ).toBe('ML-DSA-65')

    const connected = new Client({ name: 'svc-e2e-oauth', version: '1.0.0' })
    await connected.connect(new StreamableHTTPClientTransport(MCP_URL, { authProvider: provider }))
    const marker = `oauth-memory-${crypto.randomUUID()}`
    const created = await connected.callTool({ name: 'memory_create', arguments: { content: marker } })
    expect(created.isError, JSON.stringify(created)).toBeFalsy()
    const found = await connected.callTool({ name: 'memory_search', arguments: { query: marker } })
    expect((found.structuredContent as { data: unknown[] }).data).toHaveLength(1)
    await connected.close()

    // The same token on the stateless 2026-07-28 revision.
    const modern = new ClientV2(
      { name: 'svc-e2e-oauth-v2', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    )
    await modern.connect(
      new TransportV2(MCP_URL, {
        requestInit: { headers: { authorization: `Bearer ${tokens.access_token}` } },
      }),
    )
    expect((await modern.listTools()).tools.length).toBeGreaterThan(5)
    await modern.close()

    // Refresh with the SDK's own function: a new pair, and the new access token works.
    const metadata = await discoverAuthorizationServerMetadata(new URL(BASE))
    expect(metadata).toMatchObject({ issuer: BASE, code_challenge_methods_supported: ['S256'] })
    const refreshed = await refreshAuthorization(new URL(BASE), {
      metadata: metadata!,
      clientInformation: provider.client!,
      refreshToken: tokens.refresh_token!,
      resource: new URL(RESOURCE),
    })
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
    expect((await mcpPing(refreshed.access_token)).status).toBe(200)
  })

  it('the metadata documents agree and point at this authorization server', async () => {
    const documents = await Promise.all(
      [
        '/oauth/protected-resource',
        '/.well-known/oauth-protected-resource/mcp',
        '/.well-known/oauth-protected-resource',
      ].map(
        async (p) =>
          (await fetch(`${BASE}${p}`)).json() as Promise<{
            authorization_servers: string[]
            resource: string
          }>,
      ),
    )
    for (const doc of documents) expect(doc.authorization_servers).toEqual([BASE])
    const as = (await (await fetch(`${BASE}/.well-known/oauth-authorization-server`)).json()) as Record<
      string,
      unknown
    >
    expect(as).toMatchObject({
      issuer: BASE,
      token_endpoint: `${BASE}/oauth/token`,
      registration_endpoint: `${BASE}/oauth/register`,
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
    })
  })
})

describe(`OAuth negative cases, each with its RFC's error (${stack.kind})`, () => {
  it('a wrong PKCE verifier: invalid_grant (RFC 7636 §4.6), and the code still works with the right one', async () => {
    const clientId = await register()
    const { code, verifier } = await authorizationCode(clientId)
    const wrong = await exchange(clientId, code, (await pkce()).verifier)
    expect(wrong).toMatchObject({ status: 400, body: { error: 'invalid_grant' } })
    expect((await exchange(clientId, code, verifier)).status).toBe(200)
  })

  it('a reused code: invalid_grant, and the tokens issued for it are revoked (RFC 6749 §4.1.2)', async () => {
    const clientId = await register()
    const { code, verifier } = await authorizationCode(clientId)
    const first = await exchange(clientId, code, verifier)
    expect(first.status).toBe(200)
    const again = await exchange(clientId, code, verifier)
    expect(again).toMatchObject({ status: 400, body: { error: 'invalid_grant' } })
    const refresh = await form('/oauth/token', {
      grant_type: 'refresh_token',
      client_id: clientId,
      refresh_token: first.body.refresh_token!,
    })
    expect(refresh).toMatchObject({ status: 400, body: { error: 'invalid_grant' } })
  })

  it('a redirect URI that was not registered: an error page, never a redirect; a different one at the token endpoint: invalid_grant', async () => {
    const clientId = await register()
    const { challenge } = await pkce()
    const page = await fetch(
      authorizeUrl({
        client_id: clientId,
        code_challenge: challenge,
        redirect_uri: 'https://evil.example/cb',
      }),
      {
        redirect: 'manual',
      },
    )
    expect(page.status).toBe(400)
    expect(page.headers.get('location')).toBeNull()
    expect(await page.text()).toContain('not one the application registered')
    const { code, verifier } = await authorizationCode(clientId)
    const mismatch = await exchange(clientId, code, verifier, {
      redirect_uri: 'http://127.0.0.1:33418/other',
    })
    expect(mismatch).toMatchObject({ status: 400, body: { error: 'invalid_grant' } })
    // Registration refuses redirect URIs an attacker could use.
    for (const bad of ['http://evil.example/cb', 'javascript:alert(1)', 'https://ok.example/cb#frag']) {
      const res = await registration({ redirect_uris: [bad] })
      expect(res.status).toBe(400)
      expect(((await res.json()) as { error: string }).error).toBe('invalid_redirect_uri')
    }
  })

  it('a token for another resource: invalid_target from the server, invalid_token at the resource (RFC 8707, RFC 6750)', async () => {
    const clientId = await register()
    const { challenge } = await pkce()
    const back = await fetch(
      authorizeUrl({ client_id: clientId, code_challenge: challenge, resource: 'https://other.example/mcp' }),
      {
        redirect: 'manual',
      },
    )
    expect(back.status).toBe(302)
    const location = new URL(back.headers.get('location')!)
    expect(location.searchParams.get('error')).toBe('invalid_target')
    expect(location.searchParams.get('state')).toBe('st-1')
    const { code, verifier } = await authorizationCode(clientId)
    expect(await exchange(clientId, code, verifier, { resource: 'https://other.example/mcp' })).toMatchObject(
      {
        status: 400,
        body: { error: 'invalid_target' },
      },
    )
    // A genuine token (the stack's own key) bound to another resource is refused at /mcp…
    const elsewhere = await signAccessToken(
      {
        ...buildAccessTokenClaims({
          sub: 'user:00000000-0000-4000-8000-000000000000',
          aud: 'https://other.example/mcp',
          iss: 'svc',
          ttlSeconds: 600,
          tenantId: stack.tenantA.id,
        }),
      },
      signers['ML-DSA-65']!,
    )
    const atMcp = await mcpPing(elsewhere)
    expect(atMcp.status).toBe(401)
    expect(atMcp.headers.get('www-authenticate')).toMatch(/error="invalid_token".*resource_metadata="/)
    // …and a token for the MCP resource is refused on the REST API.
    const { code: code2, verifier: verifier2 } = await authorizationCode(clientId)
    const mcpToken = (await exchange(clientId, code2, verifier2)).body.access_token!
    const onRest = await fetch(`${BASE}/svc/memories`, { headers: { authorization: `Bearer ${mcpToken}` } })
    expect(onRest.status).toBe(401)
    expect(((await onRest.json()) as { error: { code: string } }).error.code).toBe('token_wrong_resource')
  })

  it('an expired access token: 401 invalid_token with the resource metadata to start again', async () => {
    const expired = await signAccessToken(
      buildAccessTokenClaims({
        sub: `user:${crypto.randomUUID()}`,
        aud: RESOURCE,
        iss: 'svc',
        ttlSeconds: 600,
        tenantId: stack.tenantA.id,
        scope: 'mcp:tools',
        now: new Date(Date.now() - 3_600_000),
      }),
      signers['ML-DSA-65']!,
    )
    const res = await mcpPing(expired)
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"')
    expect(res.headers.get('www-authenticate')).toContain(
      `resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp"`,
    )
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('token_expired')
  })

  it('a refresh token used twice: invalid_grant, and the whole authorization is revoked (RFC 9700 §4.14.2)', async () => {
    const clientId = await register()
    const { code, verifier } = await authorizationCode(clientId)
    const first = (await exchange(clientId, code, verifier)).body
    const refresh = (token: string, client = clientId) =>
      form('/oauth/token', { grant_type: 'refresh_token', client_id: client, refresh_token: token })
    const second = await refresh(first.refresh_token!)
    expect(second.status).toBe(200)
    expect(await refresh(first.refresh_token!)).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    })
    expect(await refresh(second.body.refresh_token!)).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    })
    // Neither another client nor the login refresh endpoint can spend an OAuth refresh token.
    const { code: c2, verifier: v2 } = await authorizationCode(clientId)
    const fresh = (await exchange(clientId, c2, v2)).body
    expect(await refresh(fresh.refresh_token!, await register())).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    })
    const asLogin = await fetch(`${BASE}/auth/token/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refresh_token: fresh.refresh_token }),
    })
    expect(asLogin.status).toBe(401)
    expect((await refresh(fresh.refresh_token!)).status).toBe(200)
  })

  it('a token without mcp:tools: 403 insufficient_scope naming the scope to ask for', async () => {
    const clientId = await register()
    const { code, verifier } = await authorizationCode(clientId, { scope: 'mcp:resources' })
    const token = await exchange(clientId, code, verifier)
    expect(token.body.scope).toBe('mcp:resources')
    const res = await mcpPing(token.body.access_token!)
    expect(res.status).toBe(403)
    expect(res.headers.get('www-authenticate')).toMatch(/error="insufficient_scope".*scope="mcp:tools"/)
  })

  it('PKCE is required and only S256: a request without it is sent back with invalid_request', async () => {
    const clientId = await register()
    for (const params of [
      {},
      { code_challenge: (await pkce()).challenge, code_challenge_method: 'plain' },
    ] as Record<string, string>[]) {
      const url = `${BASE}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, state: 's', ...params })}`
      const res = await fetch(url, { redirect: 'manual' })
      expect(res.status).toBe(302)
      expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe('invalid_request')
    }
  })

  it('a wrong password shows the page again (401) and issues nothing; deny sends access_denied', async () => {
    const clientId = await register()
    const { challenge } = await pkce()
    const url = authorizeUrl({ client_id: clientId, code_challenge: challenge })
    const params = Object.fromEntries(new URL(url).searchParams)
    const post = (extra: Record<string, string>) =>
      fetch(`${BASE}/oauth/authorize`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'cf-connecting-ip': address() },
        body: new URLSearchParams({ ...params, email: owner.ownerEmail, ...extra }),
      })
    const wrong = await post({ password: 'not the password', decision: 'allow' })
    expect(wrong.status).toBe(401)
    expect(await wrong.text()).toContain('The email or password is wrong.')
    const denied = await post({ password: '', decision: 'deny' })
    expect(denied.status).toBe(302)
    expect(new URL(denied.headers.get('location')!).searchParams.get('error')).toBe('access_denied')
  })

  it("five wrong passwords at the consent page lock the stranger's address out of the account, not its owner", async () => {
    const clientId = await register()
    const { challenge } = await pkce()
    const params = Object.fromEntries(
      new URL(authorizeUrl({ client_id: clientId, code_challenge: challenge })).searchParams,
    )
    const stranger = address()
    const answer = (password: string, from: string) =>
      fetch(`${BASE}/oauth/authorize`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'cf-connecting-ip': from },
        body: new URLSearchParams({
          ...params,
          email: owner.ownerEmail,
          password,
          tenant_id: stack.tenantA.id,
          decision: 'allow',
        }),
      })
    for (let i = 0; i < 5; i++) expect((await answer(`guess ${i}`, stranger)).status).toBe(401)
    const locked = await answer(owner.ownerPassword, stranger)
    expect(locked.status).toBe(429)
    expect(await locked.text()).toContain('Too many failed sign-ins to this account from your address')
    const ownerAnswer = await answer(owner.ownerPassword, address())
    expect(ownerAnswer.status).toBe(302)
    expect(new URL(ownerAnswer.headers.get('location')!).searchParams.get('code')).toBeTruthy()
  })

  it('registration is throttled per address: the 11th within the hour is 429 with Retry-After, another address still registers', async () => {
    const from = address()
    const body = { client_name: 'flood', redirect_uris: [REDIRECT] }
    for (let i = 0; i < 10; i++) expect((await registration(body, from)).status).toBe(201)
    const throttled = await registration(body, from)
    expect(throttled.status).toBe(429)
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(3000)
    expect(((await throttled.json()) as { error: string }).error).toBe('registration_throttled')
    expect((await registration(body)).status).toBe(201)
  })

  it('a client is marked authorized when it exchanges its first code (it never expires); one that only registered is not', async () => {
    const idle = await register()
    const clientId = await register()
    const { code, verifier } = await authorizationCode(clientId)
    expect((await exchange(clientId, code, verifier)).status).toBe(200)
    useWebSocketConstructor(WebSocket)
    const database = openDatabase(stack.database, { max: 1 })
    try {
      const rows = await database.db
        .select({ id: oauthClients.id, authorizedAt: oauthClients.authorizedAt })
        .from(oauthClients)
        .where(inArray(oauthClients.id, [idle, clientId]))
      expect(Object.fromEntries(rows.map((r) => [r.id, r.authorizedAt !== null]))).toEqual({
        [idle]: false,
        [clientId]: true,
      })
    } finally {
      await database.close()
    }
  })
})
