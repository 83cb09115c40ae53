/**
 * POST /mcp inside workerd, driven by the official v2 client (both protocol eras), with the real
 * models and platform workers bound in process: the routes the tools wrap answer for real. What
 * needs Postgres (memories, the policy check) is covered end to end in test/e2e/mcp.e2e.test.ts;
 * here a route that cannot reach its store shows how a route's refusal becomes a tool error.
 */

import { createExecutionContext, env } from 'cloudflare:test'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { describe, expect, it } from 'vitest'
import type { ForwardedRequest } from '../../../shared/worker/family-rpc'
import type { Identity } from '../../../shared/worker/request-context'
import { apiKeyIdentity, callFamily } from '../../../test/unit/family-call'
import ModelsWorker from '../../models/src/index'
import PlatformWorker from '../../platform/src/index'
import type { PlatformEnv } from '../../platform/src/platform.context'
import McpWorker from './index'
import type { McpEnv } from './mcp.context'

const BASE = 'https://svc.test'

/** A family worker bound the way the runtime binds a service: handle() and openapi() over "RPC". */
function bound<E>(
  Worker: new (
    ctx: ExecutionContext,
    env: E,
  ) => { handle(f: ForwardedRequest): Promise<unknown>; openapi(): unknown },
  workerEnv: E,
) {
  return {
    handle: (f: ForwardedRequest) => new Worker(createExecutionContext(), workerEnv).handle(f),
    openapi: async () => new Worker(createExecutionContext(), workerEnv).openapi(),
  } as unknown as McpEnv['MODELS']
}

function mcpEnv(extra: Partial<McpEnv> = {}): McpEnv {
  return {
    MODELS: bound(ModelsWorker, env),
    PLATFORM: bound(PlatformWorker, env as unknown as PlatformEnv),
    ...extra,
  }
}

/** A fetch that hands each request to the MCP worker as the gateway would, with this identity. */
function gatewayFetch(identity: Identity, workerEnv: McpEnv) {
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init)
    const headers: Record<string, string> = {}
    for (const [name, value] of request.headers) if (name !== 'authorization') headers[name] = value
    const body = request.method === 'POST' ? await request.text() : undefined
    return callFamily(McpWorker, workerEnv, new URL(request.url).pathname, {
      method: request.method,
      ...(body !== undefined ? { body } : {}),
      headers,
      identity,
      maxBodyBytes: 1024 * 1024,
      baseUrl: BASE,
    })
  }
}

async function connect(era: 'legacy' | 'modern', identity = apiKeyIdentity(), workerEnv = mcpEnv()) {
  const client = new Client(
    { name: 'svc-unit', version: '1.0.0' },
    era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
  )
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), { fetch: gatewayFetch(identity, workerEnv) }),
  )
  return client
}

describe.each(['legacy', 'modern'] as const)('MCP over Streamable HTTP, %s era', (era) => {
  it('lists every tool with a description, an object input schema and, for JSON routes, the route schema as output schema', async () => {
    const client = await connect(era)
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name).sort()).toEqual([
      'chat_completion',
      'crypto_algorithm_lookup',
      'crypto_policy_check',
      'document_list',
      'document_retrieve',
      'document_upload',
      'memory_create',
      'memory_search',
      'models_list',
      'reasoning_job_create',
      'reasoning_job_get',
      'web_search',
    ])
    for (const tool of tools) {
      expect(tool.description?.length).toBeGreaterThan(40)
      expect(tool.inputSchema.type).toBe('object')
    }
    const lookup = tools.find((t) => t.name === 'crypto_algorithm_lookup')!
    expect(lookup.outputSchema?.type).toBe('object')
    expect(JSON.stringify(lookup.outputSchema)).toContain('standardName')
    expect(lookup.annotations?.readOnlyHint).toBe(true)
    await client.close()
  })

  it('runs the wrapped route: one registry entry by any of its names, as structured content', async () => {
    const client = await connect(era)
    const result = await client.callTool({
      name: 'crypto_algorithm_lookup',
      arguments: { algorithm: 'ML-KEM-768' },
    })
    expect(result.isError).toBeFalsy()
    const structured = result.structuredContent as { data: { id: string; securityLevel: number }[] }
    expect(structured.data).toEqual([expect.objectContaining({ id: 'kyber-768', securityLevel: 3 })])
    expect(JSON.parse((result.content as { text: string }[])[0]!.text)).toEqual(structured)
    await client.close()
  })

  it("a route's refusal is a tool error with the route's message, not a protocol error", async () => {
    const client = await connect(era)
    const bad = await client.callTool({ name: 'crypto_algorithm_lookup', arguments: {} })
    expect(bad.isError).toBeFalsy()
    // The policy check needs the tenant's policy from Postgres, which this test has not bound.
    const refused = await client.callTool({
      name: 'crypto_policy_check',
      arguments: { algorithm: 'ML-DSA-65' },
    })
    expect(refused.isError).toBe(true)
    expect((refused.content as { text: string }[])[0]!.text).toMatch(/HTTP 503/)
    await client.close()
  })

  it('invalid arguments are a tool error naming the argument', async () => {
    const client = await connect(era)
    const result = await client.callTool({ name: 'web_search', arguments: { query: 'x', count: 50 } })
    expect(result.isError).toBe(true)
    expect((result.content as { text: string }[])[0]!.text).toMatch(/count/)
    await client.close()
  })

  it('a credential without mcp:tools gets 403 insufficient_scope on tools/call', async () => {
    const client = await connect(era, apiKeyIdentity({ scopes: ['mcp:resources'] }))
    await expect(client.callTool({ name: 'models_list', arguments: {} })).rejects.toThrow(
      /insufficient scope/i,
    )
    await client.close()
  })
})

describe('POST /mcp refusals before the protocol', () => {
  const post = (headers: Record<string, string>, workerEnv = mcpEnv(), identity = apiKeyIdentity()) =>
    callFamily(McpWorker, workerEnv, '/mcp', {
      method: 'POST',
      body: { jsonrpc: '2.0', id: 1, method: 'ping' },
      headers: {
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
        ...headers,
      },
      identity,
      baseUrl: BASE,
    })

  it('a browser page from another origin gets 403 (DNS-rebinding protection); the API origin and no origin pass', async () => {
    expect((await post({ origin: 'https://evil.example' })).status).toBe(403)
    expect((await post({ origin: 'null' })).status).toBe(403)
    expect((await post({ origin: BASE })).status).toBe(200)
    expect((await post({})).status).toBe(200)
    expect(
      (await post({ origin: 'https://console.example' }, mcpEnv({ MCP_ALLOWED_ORIGINS: 'console.example' })))
        .status,
    ).toBe(200)
  })

  it('with MCP_ALLOWED_HOSTS set, a request addressed to another host gets 403', async () => {
    const res = await post({}, mcpEnv({ MCP_ALLOWED_HOSTS: 'localhost,127.0.0.1' }))
    expect(res.status).toBe(403)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('host_not_allowed')
  })

  it('a plan without the mcp feature gets the action-required 403', async () => {
    const catalog = (await import('../../../shared/plans/plan-catalog')).PLAN_CATALOG_CONFIG
    const withoutMcp = {
      ...catalog,
      plans: catalog.plans.map((p) =>
        p.id === 'free' ? { ...p, features: p.features.filter((f) => f !== 'mcp') } : p,
      ),
    }
    const res = await post(
      {},
      mcpEnv({ PLAN_CATALOG: JSON.stringify(withoutMcp) }),
      apiKeyIdentity({ planId: 'free' }),
    )
    expect(res.status).toBe(403)
    const body = (await res.json()) as {
      error: { code: string }
      svc_upgrade: { reason: string; requested_feature: string }
    }
    expect(body.svc_upgrade).toMatchObject({ reason: 'feature_required', requested_feature: 'mcp' })
  })

  it('GET and DELETE /mcp are 405: the server keeps no session', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await callFamily(McpWorker, mcpEnv(), '/mcp', {
        method,
        identity: apiKeyIdentity(),
        headers: { accept: 'text/event-stream' },
      })
      expect(res.status).toBe(405)
    }
  })
})
