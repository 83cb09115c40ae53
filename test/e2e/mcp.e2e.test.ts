/**
 * The hosted MCP server through the gateway of a stack started with `npm start`, driven by the
 * official SDK clients: v1 (`@modelcontextprotocol/sdk`, protocol 2025-11-25, initialize
 * handshake) and v2 (`@modelcontextprotocol/client` pinned to the stateless 2026-07-28 revision),
 * with API keys. Every tool call is checked against the REST route it wraps, called the same way
 * with the same key: same success body, or a tool error carrying the route's message. Then the
 * tenancy proof per tool, and the HTTP-level rules of both revisions.
 */
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
} from '@modelcontextprotocol/client'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { beforeAll, describe, expect, inject, it } from 'vitest'
import { createWorkspace, ledgerRows, tag, type Workspace, waitForLedger } from './chat-fixtures.ts'

const stack = inject('stack')
const MCP_URL = new URL(`${stack.baseUrl}/mcp`)

interface ToolResult {
  isError?: boolean
  content: { type: string; text?: string }[]
  structuredContent?: Record<string, unknown>
}

interface McpSession {
  listTools(): Promise<{
    tools: { name: string; inputSchema: Record<string, unknown>; outputSchema?: Record<string, unknown> }[]
  }>
  callTool(name: string, args: Record<string, unknown>): Promise<ToolResult>
  listResources(): Promise<{ resources: { uri: string; name: string }[] }>
  readResource(uri: string): Promise<{ contents: { uri: string; mimeType?: string; text?: string }[] }>
  close(): Promise<void>
}

async function connect(era: '2025-11-25' | '2026-07-28', key: string): Promise<McpSession> {
  const requestInit = { headers: { authorization: `Bearer ${key}` } }
  if (era === '2025-11-25') {
    const client = new ClientV1({ name: 'svc-e2e-v1', version: '1.0.0' })
    await client.connect(new TransportV1(MCP_URL, { requestInit }))
    expect(client.getServerVersion()?.name).toBe('svc')
    return {
      listTools: () => client.listTools() as never,
      callTool: (name, args) => client.callTool({ name, arguments: args }) as Promise<ToolResult>,
      listResources: () => client.listResources() as never,
      readResource: (uri) => client.readResource({ uri }) as never,
      close: () => client.close(),
    }
  }
  const client = new ClientV2(
    { name: 'svc-e2e-v2', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  )
  await client.connect(new TransportV2(MCP_URL, { requestInit }))
  return {
    listTools: () => client.listTools() as never,
    callTool: (name, args) => client.callTool({ name, arguments: args }) as Promise<ToolResult>,
    listResources: () => client.listResources() as never,
    readResource: (uri) => client.readResource({ uri }) as never,
    close: () => client.close(),
  }
}

async function rest(
  key: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

const text = (result: ToolResult) => result.content.map((c) => c.text ?? '').join('\n')

/** The tool outcome is the route's: its success body as structured content, or its refusal's message as a tool error. */
function expectSameAsRoute(
  result: ToolResult,
  route: { status: number; body: Record<string, unknown> },
  comparable: (body: Record<string, unknown>) => unknown = (b) => b,
) {
  if (route.status >= 200 && route.status < 300) {
    expect(result.isError, text(result)).toBeFalsy()
    expect(comparable(result.structuredContent ?? JSON.parse(text(result)))).toEqual(comparable(route.body))
  } else {
    expect(result.isError).toBe(true)
    const message = (route.body.error as { message: string }).message
    expect(text(result)).toContain(message)
    expect(text(result)).toContain(`HTTP ${route.status}`)
  }
}

let a: Workspace
let b: Workspace

beforeAll(async () => {
  a = await createWorkspace('pro')
  b = await createWorkspace('pro')
})

describe.each(['2025-11-25', '2026-07-28'] as const)(`MCP tools over protocol %s (${stack.kind})`, (era) => {
  it('lists the tools with input schemas a model can use and output schemas for structured routes', async () => {
    const session = await connect(era, a.testKey)
    const { tools } = await session.listTools()
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
    const search = tools.find((t) => t.name === 'web_search')!
    expect(search.inputSchema).toMatchObject({
      type: 'object',
      required: ['query'],
      additionalProperties: false,
    })
    expect(search.outputSchema).toMatchObject({ type: 'object', required: ['provider', 'results'] })
    await session.close()
  })

  it('every tool answers what its REST route answers for the same key', async () => {
    const session = await connect(era, a.testKey)
    const key = a.testKey
    const query = `durable objects ${era}`
    expectSameAsRoute(
      await session.callTool('web_search', { query, count: 2 }),
      await rest(key, 'POST', '/svc/code/v1/search', { query, count: 2 }),
    )
    expectSameAsRoute(await session.callTool('models_list', {}), await rest(key, 'GET', '/svc/models'))
    expectSameAsRoute(
      await session.callTool('crypto_algorithm_lookup', { type: 'kem', status: 'NIST_FINAL' }),
      await rest(key, 'GET', '/platform/v1/crypto/algorithms?type=kem&status=NIST_FINAL'),
    )
    expectSameAsRoute(
      await session.callTool('crypto_policy_check', { algorithm: 'EdDSA', context: 'token_signature' }),
      await rest(key, 'GET', '/platform/v1/crypto/policy/check?algorithm=EdDSA&context=token_signature'),
    )
    const marker = tag('mcp-memory')
    const created = await session.callTool('memory_create', {
      content: `${marker} prefers eu-west`,
      metadata: { topic: 'region' },
    })
    expect(created.isError, text(created)).toBeFalsy()
    expect(created.structuredContent).toMatchObject({
      object: 'memory',
      content: `${marker} prefers eu-west`,
      body: { content: `${marker} prefers eu-west`, metadata: { topic: 'region' } },
    })
    expectSameAsRoute(
      await session.callTool('memory_search', { query: marker, k: 5 }),
      await rest(key, 'POST', '/svc/memories/search', { query: marker, k: 5 }),
    )
    const source = `mcp-e2e/${marker}.md`
    const content = `${marker} Signing keys rotate every 90 days.\n\nThe audit log keeps every rotation.`
    const uploaded = await session.callTool('document_upload', { source, content })
    expect(uploaded.isError, text(uploaded)).toBeFalsy()
    expect(uploaded.structuredContent).toMatchObject({ object: 'document', source, status: 'created' })
    // The same upload on the route finds the document the tool stored, unchanged.
    const again = await rest(key, 'POST', '/svc/documents/upload', { source, content })
    expect(again.body).toMatchObject({ id: uploaded.structuredContent!.id, status: 'unchanged' })
    expectSameAsRoute(
      await session.callTool('document_list', { limit: 5 }),
      await rest(key, 'GET', '/svc/documents?limit=5'),
    )
    expectSameAsRoute(
      await session.callTool('document_retrieve', { query: marker, k: 2 }),
      await rest(key, 'POST', '/svc/documents/retrieve', { query: marker, k: 2 }),
    )
    const chatArgs = { model: 'svc-cell', prompt: 'Say hello', max_tokens: 16 } as const
    const chat = await session.callTool('chat_completion', chatArgs)
    const chatRoute = await rest(key, 'POST', '/svc/chat/completions', {
      model: 'svc-cell',
      messages: [{ role: 'user', content: 'Say hello' }],
      max_tokens: 16,
    })
    expectSameAsRoute(chat, chatRoute, (body) => ({
      object: body.object,
      model: body.model,
      choices: body.choices,
    }))
    const idempotencyKey = `mcp-e2e-${crypto.randomUUID()}`
    const job = { prompt: 'Pick the best of three plans', model: 'svc-hive', product: 'simulation_cloud' }
    const jobRoute = await rest(key, 'POST', '/svc/quantum-reasoning/jobs', job, {
      'idempotency-key': idempotencyKey,
    })
    expectSameAsRoute(
      await session.callTool('reasoning_job_create', { idempotency_key: idempotencyKey, ...job }),
      jobRoute,
      (body) => (body.job ?? body) as unknown,
    )
    const jobId = crypto.randomUUID()
    expectSameAsRoute(
      await session.callTool('reasoning_job_get', { job_id: jobId }),
      await rest(key, 'GET', `/svc/quantum-reasoning/jobs/${jobId}`),
    )
    await session.close()
  })

  it("resources: the caller's documents and memories, read as the routes answer them", async () => {
    const session = await connect(era, a.liveKey)
    const marker = tag('mcp-resource')
    const doc = await session.callTool('document_upload', {
      source: `${marker}.txt`,
      content: `${marker} text`,
    })
    const id = (doc.structuredContent as { id: string }).id
    await session.callTool('memory_create', { content: `${marker} remembered` })
    const { resources } = await session.listResources()
    expect(resources.map((r) => r.uri)).toEqual(
      expect.arrayContaining(['svc://memories', `svc://documents/${id}`]),
    )
    expect(resources.find((r) => r.uri === `svc://documents/${id}`)?.name).toBe(`${marker}.txt`)
    const read = await session.readResource(`svc://documents/${id}`)
    expect(read.contents[0]?.mimeType).toBe('application/json')
    expect(JSON.parse(read.contents[0]!.text!)).toEqual(
      (await rest(a.liveKey, 'GET', `/svc/documents/${id}`)).body,
    )
    const memories = await session.readResource('svc://memories')
    expect(memories.contents[0]!.text).toContain(`${marker} remembered`)
    await expect(session.readResource(`svc://documents/${crypto.randomUUID()}`)).rejects.toThrow(
      /No document|not found/i,
    )
    await session.close()
  })

  it('bad arguments are tool errors naming the argument; unknown arguments (a tenant id) are refused', async () => {
    const session = await connect(era, a.testKey)
    const count = await session.callTool('web_search', { query: 'x', count: 11 })
    expect(count.isError).toBe(true)
    expect(text(count)).toMatch(/count/)
    const tenant = await session.callTool('memory_search', { query: 'x', tenant_id: b.tenantId })
    expect(tenant.isError).toBe(true)
    expect(text(tenant)).toMatch(/tenant_id/)
    await session.close()
  })
})

describe(`MCP tenancy: a tool call never reaches another tenant's data (${stack.kind})`, () => {
  it('memory_create and memory_search: what A stores, B can neither find nor list', async () => {
    const marker = tag('tenancy')
    const sessionA = await connect('2025-11-25', a.liveKey)
    const sessionB = await connect('2026-07-28', b.liveKey)
    expect(
      (await sessionA.callTool('memory_create', { content: `${marker} A's launch code` })).isError,
    ).toBeFalsy()
    const foundByA = await sessionA.callTool('memory_search', { query: marker })
    expect((foundByA.structuredContent as { data: unknown[] }).data).toHaveLength(1)
    const foundByB = await sessionB.callTool('memory_search', { query: marker })
    expect(foundByB.structuredContent).toEqual({ object: 'list', data: [] })
    const listedByB = await rest(b.liveKey, 'GET', '/svc/memories?limit=100')
    expect(JSON.stringify(listedByB.body)).not.toContain(marker)
    // Memories are personal: another key of tenant A does not see them either.
    const otherKeyOfA = await connect('2026-07-28', a.testKey)
    expect((await otherKeyOfA.callTool('memory_search', { query: marker })).structuredContent).toEqual({
      object: 'list',
      data: [],
    })
    await Promise.all([sessionA.close(), sessionB.close(), otherKeyOfA.close()])
  })

  it('documents: what A uploads, B can neither list, retrieve nor read as a resource', async () => {
    const marker = tag('doc-tenancy')
    const sessionA = await connect('2026-07-28', a.liveKey)
    const sessionB = await connect('2025-11-25', b.liveKey)
    const uploaded = await sessionA.callTool('document_upload', {
      source: `secret/${marker}.md`,
      content: `${marker} tenant A's merger plan`,
    })
    const id = (uploaded.structuredContent as { id: string }).id
    const foundByA = await sessionA.callTool('document_retrieve', { query: marker })
    expect(JSON.stringify(foundByA.structuredContent)).toContain(id)
    const foundByB = await sessionB.callTool('document_retrieve', { query: marker, k: 100 })
    expect(foundByB.isError, text(foundByB)).toBeFalsy()
    expect(JSON.stringify(foundByB.structuredContent)).not.toContain(marker)
    const listedByB = await sessionB.callTool('document_list', { limit: 100 })
    expect(JSON.stringify(listedByB.structuredContent)).not.toContain(id)
    expect((await sessionB.listResources()).resources.map((r) => r.uri)).not.toContain(
      `svc://documents/${id}`,
    )
    await expect(sessionB.readResource(`svc://documents/${id}`)).rejects.toThrow(/No document/)
    await Promise.all([sessionA.close(), sessionB.close()])
  })

  it("crypto_policy_check decides with the caller's own policy; web_search and chat_completion are metered to the caller's tenant", async () => {
    const fresh = await createWorkspace('pro')
    const other = await createWorkspace('pro')
    const session = await connect('2026-07-28', fresh.testKey)
    const check = await session.callTool('crypto_policy_check', { algorithm: 'ML-KEM-768' })
    expect(check.structuredContent).toMatchObject({ tenant_id: fresh.tenantId })
    expect((await session.callTool('web_search', { query: 'tenancy of metering' })).isError).toBeFalsy()
    expect(
      (await session.callTool('chat_completion', { model: 'svc-cell', prompt: 'hi', max_tokens: 8 })).isError,
    ).toBeFalsy()
    const rows = await waitForLedger(
      fresh.tenantId,
      (r) => r.some((row) => row.unit === 'requests') && r.some((row) => row.endpoint === 'chat.completions'),
    )
    expect(rows.every((row) => row.mode === 'test')).toBe(true)
    expect(await ledgerRows(other.tenantId)).toEqual([])
    await session.close()
  })

  it("reasoning_job_get with another tenant's job id answers as the route does for an unknown job", async () => {
    const session = await connect('2025-11-25', b.liveKey)
    const job = { prompt: 'tenant A job', model: 'svc-hive', product: 'simulation_cloud' }
    const created = await rest(a.liveKey, 'POST', '/svc/quantum-reasoning/jobs', job, {
      'idempotency-key': `tenancy-${crypto.randomUUID()}`,
    })
    const jobId = ((created.body.job as { id?: string } | undefined)?.id ??
      created.body.id ??
      crypto.randomUUID()) as string
    const result = await session.callTool('reasoning_job_get', { job_id: jobId })
    expect(result.isError).toBe(true)
    expect(text(result)).not.toContain('tenant A job')
    expectSameAsRoute(result, await rest(b.liveKey, 'GET', `/svc/quantum-reasoning/jobs/${jobId}`))
    await session.close()
  })
})

describe(`POST /mcp at the HTTP level (${stack.kind})`, () => {
  const post = (headers: Record<string, string>, body: unknown) =>
    fetch(MCP_URL, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...headers,
      },
      body: JSON.stringify(body),
    })
  const ping = { jsonrpc: '2.0', id: 1, method: 'ping' }

  it('no credential or a bad one: 401 with the protected-resource challenge', async () => {
    for (const headers of [{}, { authorization: 'Bearer svc_sk_live_nope' }] as Record<string, string>[]) {
      const res = await post(headers, ping)
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toContain(
        `resource_metadata="${stack.baseUrl}/.well-known/oauth-protected-resource/mcp"`,
      )
    }
  })

  it('a 2025-11-25 initialize needs no session: no Mcp-Session-Id is issued and later requests need none', async () => {
    const auth = { authorization: `Bearer ${a.testKey}` }
    const init = await post(auth, {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    })
    expect(init.status).toBe(200)
    expect(init.headers.get('mcp-session-id')).toBeNull()
    const list = await post(
      { ...auth, 'mcp-protocol-version': '2025-11-25' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    )
    expect(list.status).toBe(200)
  })

  it('2026-07-28: a Mcp-Method header that disagrees with the body, and an unsupported revision, get the spec errors', async () => {
    const auth = { authorization: `Bearer ${a.testKey}` }
    const envelope = (method: string, version = '2026-07-28') => ({
      jsonrpc: '2.0',
      id: 7,
      method,
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': version,
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    })
    const mismatch = await post(
      { ...auth, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' },
      envelope('tools/list'),
    )
    expect(mismatch.status).toBe(400)
    expect(((await mismatch.json()) as { error: { code: number } }).error.code).toBe(-32020)
    const call = envelope('tools/call') as { params: Record<string, unknown> }
    call.params = { ...call.params, name: 'models_list', arguments: {} }
    const nameMismatch = await post(
      { ...auth, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'web_search' },
      call,
    )
    expect(nameMismatch.status).toBe(400)
    expect(((await nameMismatch.json()) as { error: { code: number } }).error.code).toBe(-32020)
    const missingName = await post(
      { ...auth, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' },
      call,
    )
    expect(missingName.status).toBe(400)
    const unsupported = await post(
      { ...auth, 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
      envelope('tools/list', '2099-01-01'),
    )
    expect(unsupported.status).toBe(400)
    const error = ((await unsupported.json()) as { error: { code: number; data?: { supported?: string[] } } })
      .error
    expect(error.data?.supported).toContain('2026-07-28')
  })

  it('GET and DELETE /mcp are 405 (stateless server, no stream to open or session to end)', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(MCP_URL, {
        method,
        headers: { authorization: `Bearer ${a.testKey}`, accept: 'text/event-stream' },
      })
      expect(res.status).toBe(405)
    }
  })

  it('a browser page from another origin is refused (DNS-rebinding protection)', async () => {
    const res = await post({ authorization: `Bearer ${a.testKey}`, origin: 'https://evil.example' }, ping)
    expect(res.status).toBe(403)
  })
})
