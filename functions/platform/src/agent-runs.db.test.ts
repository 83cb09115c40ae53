/**
 * The workspace's agent runs as the gateway calls the platform family: runs started through the
 * code family (real AgentRun objects in the code worker, which write the run index in Postgres),
 * listed, read and cancelled here. Tenancy and the member rule are checked per route.
 */
import { describe, expect, it, vi } from 'vitest'
import type { Identity } from '../../../shared/worker/request-context'
import { createTenant, databaseEnv } from '../../../test/unit/database'
import { apiKeyIdentity, callFamily, errorOf } from '../../../test/unit/family-call'
import CodeWorker from '../../code/src/index'
import PlatformWorker from './index'

interface Summary {
  id: string
  state: string
  mode: string
  agent_mode: string
  model: string
  started_by: { principal: string; api_key_id: string | null; user_id: string | null }
  turn_count: number
  usage: { total_tokens: number; cost_usd: number }
}
interface Page {
  data: Summary[]
  next_cursor: string | null
}

const BASE = '/platform/v1/agent-runs'
const platform = (identity: Identity, method: string, path: string) =>
  callFamily(PlatformWorker, databaseEnv, path, { method, identity })
const code = (identity: Identity, method: string, path: string, body?: unknown) =>
  callFamily(CodeWorker as never, databaseEnv, path, {
    method,
    identity,
    ...(body === undefined ? {} : { body }),
  })

function testKey(tenantId: string, role: Identity['role'] = 'owner'): Identity {
  return apiKeyIdentity({
    tenantId,
    role,
    mode: 'test',
    principal: { kind: 'api_key', keyId: crypto.randomUUID(), mode: 'test' },
  })
}

/** A person signed in (their own login), as the console's token is, with the switch on `mode`. */
function login(tenantId: string, role: Identity['role'], mode: Identity['mode'] = 'test'): Identity {
  return {
    tenantId,
    mode,
    principal: {
      kind: 'access_token',
      subject: `user:${crypto.randomUUID()}`,
      audience: 'platform',
      tokenId: crypto.randomUUID(),
      algorithm: 'ML-DSA-65',
    },
    role,
    planId: 'pro',
    scopes: [],
  }
}

/**
 * A real turn in the code family: `waiting` leaves the run awaiting an approval (cancellable),
 * otherwise it completes.
 */
async function startRun(identity: Identity, waiting = true): Promise<string> {
  const runId = crypto.randomUUID()
  const res = await code(identity, 'POST', '/svc/code/v1/turns', {
    protocol: 'svc.code.v1',
    session_id: 'platform-test',
    run_id: runId,
    turn_id: 'turn-1',
    model: 'svc-comb',
    mode: 'edit',
    request: waiting ? 'call write_file' : 'Say hello',
    client_tools: waiting
      ? [{ name: 'write_file', description: 'w', input_schema: { type: 'object' }, tags: ['edit'] }]
      : [],
    workspace: {},
    transcript: [],
    capabilities: {},
  })
  expect(res.status, await res.clone().text()).toBe(200)
  await res.text()
  return runId
}

async function list(identity: Identity, query = ''): Promise<Page> {
  const res = await platform(identity, 'GET', `${BASE}${query}`)
  expect(res.status, await res.clone().text()).toBe(200)
  return (await res.json()) as Page
}

/**
 * The list once the index has the runs in these states (each object writes its row just after
 * each change: the stream's last event can be read a moment before).
 */
async function listed(identity: Identity, states: Record<string, string>, query = ''): Promise<Summary[]> {
  let data: Summary[] = []
  await vi.waitFor(
    async () => {
      data = (await list(identity, query)).data
      const seen = Object.fromEntries(data.filter((r) => r.id in states).map((r) => [r.id, r.state]))
      expect(seen).toEqual(states)
    },
    { timeout: 5_000, interval: 50 },
  )
  return data
}

describe('GET /platform/v1/agent-runs', () => {
  it("lists the workspace's runs newest first with who started them, filters by state and mode, and pages", async () => {
    const tenantId = await createTenant()
    const keyA = testKey(tenantId)
    const keyB = testKey(tenantId, 'member')
    const waiting = await startRun(keyA)
    const done = await startRun(keyB, false)
    const newest = await startRun(keyA)
    const runs = await listed(keyA, {
      [waiting]: 'awaiting_approval',
      [done]: 'completed',
      [newest]: 'awaiting_approval',
    })
    expect(runs.map((r) => r.id)).toEqual([newest, done, waiting])
    const keyAId = keyA.principal.kind === 'api_key' ? keyA.principal.keyId : ''
    expect(runs[2]).toMatchObject({
      object: 'agent_run',
      state: 'awaiting_approval',
      mode: 'test',
      agent_mode: 'edit',
      model: 'svc-comb',
      started_by: { principal: `key:${keyAId}`, api_key_id: keyAId, user_id: null },
      turn_count: 1,
      usage: { cost_usd: 0 },
    })
    expect(runs[2]!.usage.total_tokens).toBeGreaterThan(0)
    expect(runs[1]).toMatchObject({ state: 'completed' })

    expect((await list(keyA, '?state=completed')).data.map((r) => r.id)).toEqual([done])
    expect((await list(keyA, '?mode=live')).data).toEqual([])
    expect((await list(keyA, '?mode=test&state=awaiting_approval')).data.map((r) => r.id)).toEqual([
      newest,
      waiting,
    ])

    const seen: string[] = []
    let cursor: string | null = null
    do {
      const page: Page = await list(keyA, `?limit=1${cursor ? `&cursor=${cursor}` : ''}`)
      expect(page.data.length).toBe(1)
      seen.push(page.data[0]!.id)
      cursor = page.next_cursor
    } while (cursor)
    expect(seen).toEqual([newest, done, waiting])

    const bad = await platform(keyA, 'GET', `${BASE}?cursor=not-a-cursor`)
    expect(bad.status).toBe(400)
    expect(await errorOf(bad)).toMatchObject({ code: 'invalid_cursor', param: 'cursor' })
    expect((await platform(keyA, 'GET', `${BASE}?state=sleeping`)).status).toBe(400)
  })

  it("never shows another workspace's runs: not listed, and the same 404 as a run that does not exist", async () => {
    const mine = testKey(await createTenant())
    const theirs = testKey(await createTenant())
    const runId = await startRun(mine)
    await listed(mine, { [runId]: 'awaiting_approval' })
    expect((await list(theirs)).data).toEqual([])
    for (const [method, path] of [
      ['GET', `${BASE}/${runId}`],
      ['POST', `${BASE}/${runId}/cancel`],
    ] as const) {
      const other = await platform(theirs, method, path)
      expect(other.status).toBe(404)
      const missing = await platform(mine, method, path.replace(runId, crypto.randomUUID()))
      expect(missing.status).toBe(404)
      expect(await errorOf(other)).toEqual(await errorOf(missing))
    }
    // Still running: the other workspace's cancel changed nothing.
    const status = await code(mine, 'GET', `/svc/agents/runs/${runId}`)
    expect(((await status.json()) as { state: string }).state).toBe('awaiting_approval')
  })

  it("never shows the other mode's runs: a person's live view lacks the test runs, its own included", async () => {
    const tenantId = await createTenant()
    const key = testKey(tenantId)
    const personTest = login(tenantId, 'owner', 'test')
    const personLive = { ...personTest, mode: 'live' as const }
    const keyRun = await startRun(key)
    const personRun = await startRun(personTest)
    await listed(personTest, { [keyRun]: 'awaiting_approval', [personRun]: 'awaiting_approval' })
    expect((await list(personLive)).data).toEqual([])
    expect((await list(personLive, '?mode=test')).data).toEqual([])
    for (const runId of [keyRun, personRun]) {
      for (const [method, path] of [
        ['GET', `${BASE}/${runId}`],
        ['POST', `${BASE}/${runId}/cancel`],
      ] as const) {
        const res = await platform(personLive, method, path)
        expect(res.status, `${method} ${path}`).toBe(404)
        expect(await errorOf(res)).toMatchObject({ code: 'run_not_found' })
      }
    }
    // The person's own run, asked for in live mode, is not there either (its object is another).
    expect((await code(personLive, 'GET', `/svc/agents/runs/${personRun}`)).status).toBe(404)
    expect((await code(personLive, 'DELETE', `/svc/agents/runs/${personRun}`)).status).toBe(404)
    const status = await code(personTest, 'GET', `/svc/agents/runs/${personRun}`)
    expect(await status.json()).toMatchObject({ state: 'awaiting_approval', test_mode: true })
  })

  it('shows a member only the runs it started; owners and admins see them all', async () => {
    const tenantId = await createTenant()
    const owner = testKey(tenantId)
    // A member's own key (a login's turns are live ones, which need a model provider).
    const member = testKey(tenantId, 'member')
    const admin = login(tenantId, 'admin')
    const ownersRun = await startRun(owner)
    const membersRun = await startRun(member)
    await listed(owner, { [ownersRun]: 'awaiting_approval', [membersRun]: 'awaiting_approval' })
    expect((await list(admin)).data.map((r) => r.id)).toEqual([membersRun, ownersRun])
    const own = (await list(member)).data
    expect(own.map((r) => r.id)).toEqual([membersRun])
    const keyId = member.principal.kind === 'api_key' ? member.principal.keyId : ''
    expect(own[0]!.started_by).toEqual({ principal: `key:${keyId}`, api_key_id: keyId, user_id: null })
    expect((await platform(member, 'GET', `${BASE}/${ownersRun}`)).status).toBe(404)
    expect((await platform(member, 'POST', `${BASE}/${ownersRun}/cancel`)).status).toBe(404)
    const detail = await platform(member, 'GET', `${BASE}/${membersRun}`)
    expect(detail.status).toBe(200)
    expect(await detail.json()).toMatchObject({
      id: membersRun,
      state: 'awaiting_approval',
      status: { object: 'agent.run', id: membersRun, pending_approvals: [{ tool_name: 'write_file' }] },
    })
    const cancelled = await platform(member, 'POST', `${BASE}/${membersRun}/cancel`)
    expect(cancelled.status).toBe(200)
  })
})

describe('POST /platform/v1/agent-runs/{runId}/cancel', () => {
  it("cancels a run another credential started, as that credential's DELETE would, and logs who did", async () => {
    const tenantId = await createTenant()
    const starter = testKey(tenantId, 'member')
    const admin = login(tenantId, 'admin')
    const runId = await startRun(starter)
    await listed(admin, { [runId]: 'awaiting_approval' })

    const res = await platform(admin, 'POST', `${BASE}/${runId}/cancel`)
    expect(res.status, await res.clone().text()).toBe(200)
    expect(await res.json()).toMatchObject({
      object: 'agent.run',
      id: runId,
      state: 'cancelled',
      pending_approvals: [],
    })
    // The run's own status, read with the key that started it.
    const status = await code(starter, 'GET', `/svc/agents/runs/${runId}`)
    expect(await status.json()).toMatchObject({ state: 'cancelled', pending_approvals: [] })
    // The index shows it at once.
    expect((await list(admin, '?state=cancelled')).data.map((r) => r.id)).toEqual([runId])

    const entries = await platform(admin, 'GET', '/platform/v1/audit-log/entries')
    const events = ((await entries.json()) as { data: { event: Record<string, unknown> }[] }).data
      .map((e) => e.event)
      .filter((e) => e.kind === 'agent_run.cancelled')
    const adminSubject = admin.principal.kind === 'access_token' ? admin.principal.subject : ''
    const starterKey = starter.principal.kind === 'api_key' ? starter.principal.keyId : ''
    expect(events).toEqual([
      expect.objectContaining({ run_id: runId, started_by: `key:${starterKey}`, actor: adminSubject }),
    ])

    const again = await platform(admin, 'POST', `${BASE}/${runId}/cancel`)
    expect(again.status).toBe(409)
    expect(await errorOf(again)).toMatchObject({ code: 'run_terminal' })
  })

  it('asks which run is meant when two credentials picked the same run id', async () => {
    const tenantId = await createTenant()
    const first = testKey(tenantId)
    const second = testKey(tenantId)
    const runId = await startRun(first)
    const res = await code(second, 'POST', '/svc/code/v1/turns', {
      protocol: 'svc.code.v1',
      session_id: 's',
      run_id: runId,
      turn_id: 'turn-1',
      model: 'svc-comb',
      mode: 'edit',
      request: 'call write_file',
      client_tools: [
        { name: 'write_file', description: 'w', input_schema: { type: 'object' }, tags: ['edit'] },
      ],
      workspace: {},
      transcript: [],
      capabilities: {},
    })
    await res.text()
    await vi.waitFor(async () => expect((await list(first)).data).toHaveLength(2), { timeout: 5_000 })
    const ambiguous = await platform(first, 'POST', `${BASE}/${runId}/cancel`)
    expect(ambiguous.status).toBe(409)
    expect(await errorOf(ambiguous)).toMatchObject({ code: 'run_id_ambiguous', param: 'started_by' })
    const secondKey = second.principal.kind === 'api_key' ? second.principal.keyId : ''
    const picked = await platform(first, 'POST', `${BASE}/${runId}/cancel?started_by=key:${secondKey}`)
    expect(picked.status).toBe(200)
    const states = (await list(first)).data.map((r) => `${r.started_by.api_key_id}:${r.state}`).sort()
    const firstKey = first.principal.kind === 'api_key' ? first.principal.keyId : ''
    expect(states).toEqual([`${firstKey}:awaiting_approval`, `${secondKey}:cancelled`].sort())
  })
})
