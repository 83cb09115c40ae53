/**
 * RFC 9728 protected-resource metadata as the gateway serves it (public routes): the `resource`
 * an MCP client compares with the URL it fetched, the authorization servers it goes to for a
 * token, and what it may cache.
 */
import { env } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { callFamily } from '../../../test/unit/family-call'
import McpWorker from './index'
import type { McpEnv } from './mcp.context'
import { ProtectedResourceMetadataSchema } from './mcp.schemas'

const BASE = 'https://api.example.com'

async function metadata(path: string, mcpEnv: McpEnv = env as McpEnv, baseUrl = BASE) {
  const res = await callFamily(McpWorker, mcpEnv, path, { baseUrl })
  expect(res.status).toBe(200)
  return { res, body: ProtectedResourceMetadataSchema.parse(await res.json()) }
}

describe('protected-resource metadata (RFC 9728)', () => {
  it.each([
    ['/oauth/protected-resource', `${BASE}/mcp`, 'svc hosted MCP server'],
    ['/.well-known/oauth-protected-resource/mcp', `${BASE}/mcp`, 'svc hosted MCP server'],
    ['/.well-known/oauth-protected-resource', BASE, 'svc API'],
  ])('%s describes %s (§3.3: the resource the client derived the URL from)', async (path, resource, name) => {
    const { body } = await metadata(path)
    expect(body.resource).toBe(resource)
    expect(body.resource_name).toBe(name)
    expect(body.bearer_methods_supported).toEqual(['header'])
    expect(body.resource_documentation).toBe(`${BASE}/docs`)
    expect(body.scopes_supported).toEqual(expect.arrayContaining(['mcp:tools', 'mcp:resources']))
  })

  it('builds every URL from the public base URL the gateway saw, not from the internal request URL', async () => {
    const { body } = await metadata(
      '/.well-known/oauth-protected-resource/mcp',
      {},
      'https://edge.example.org',
    )
    expect(body.resource).toBe('https://edge.example.org/mcp')
    expect(body.authorization_servers).toEqual(['https://edge.example.org'])
  })

  it('names this deployment as the authorization server unless OAUTH_AUTHORIZATION_SERVERS is set', async () => {
    expect((await metadata('/oauth/protected-resource', {})).body.authorization_servers).toEqual([BASE])
    expect(
      (await metadata('/oauth/protected-resource', { OAUTH_AUTHORIZATION_SERVERS: '' })).body
        .authorization_servers,
    ).toEqual([BASE])
    const configured = await metadata('/oauth/protected-resource', {
      OAUTH_AUTHORIZATION_SERVERS: ' https://login.example.com , https://backup.example.com/tenant ',
    })
    expect(configured.body.authorization_servers).toEqual([
      'https://login.example.com',
      'https://backup.example.com/tenant',
    ])
  })

  it('is public and cacheable for an hour', async () => {
    const { res } = await metadata('/.well-known/oauth-protected-resource')
    expect(res.headers.get('cache-control')).toBe('public, max-age=3600')
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
  })
})
