/**
 * Test and live are separate worlds (README, "Test and live"; docs/plans.md, "Test mode"), probed
 * the way a hostile or careless caller would: in two workspaces, with a test key, a live key and a
 * person's token in either mode (the `x-svc-mode` header, as the console's switch sends it), each
 * kind of resource a credential creates is made in one world, and every read, list, search,
 * erase, receipt, cancel and download route is tried from every other world. Each answer must be
 * the 404 of a resource that does not exist (same status, same code: never a 403 that says it is
 * there) or a list without it; the same world still sees it. Names a client picks (a document's
 * source, a connection's name, an Idempotency-Key, a run id) are free again in the other world.
 */
import { sql } from 'drizzle-orm'
import { beforeAll, describe, expect, it } from 'vitest'
import { generatePassword, setUserPassword } from '../../scripts/db/user-passwords.ts'
import { createWorkspace, stack, withDatabase } from './chat-fixtures.ts'

type Mode = 'test' | 'live'

/** Someone calling the API: a credential in one workspace and one mode. */
interface Actor {
  name: string
  world: string
  mode: Mode
  headers: Record<string, string>
}

interface World {
  tenantId: string
  testKey: Actor
  liveKey: Actor
  personTest: Actor
  personLive: Actor
}

const ionq = stack.fakes.ionq as { baseUrl: string; keys: { tenant: string } }
const uniq = () => crypto.randomUUID().slice(0, 8)
const address = () => `2001:db8::${uniq().slice(0, 4)}:${uniq().slice(0, 4)}`

async function call(actor: Actor, method: string, path: string, body?: unknown, extra = {}) {
  return fetch(`${stack.baseUrl}${path}`, {
    method,
    headers: {
      ...actor.headers,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...extra,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
}

async function json<T>(res: Response, status: number): Promise<T> {
  const text = await res.text()
  expect(res.status, text).toBe(status)
  return JSON.parse(text) as T
}

/** A workspace on Enterprise (every feature) with its keys and its owner's token in both modes. */
async function world(name: string): Promise<World> {
  const ws = await createWorkspace('enterprise')
  const email = await withDatabase(async (db) => {
    const found = await db.execute<{ email: string }>(sql`
      select u.email from users u join members m on m.user_id = u.id where m.tenant_id = ${ws.tenantId}::uuid`)
    return found.rows[0]!.email
  })
  const password = generatePassword()
  await withDatabase((db) => setUserPassword(db, email, password))
  const login = await fetch(`${stack.baseUrl}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'cf-connecting-ip': address() },
    body: JSON.stringify({ email, password }),
  })
  const { access_token } = await json<{ access_token: string }>(login, 200)
  const key = (k: string) => ({ authorization: `Bearer ${k}` })
  const person = { authorization: `Bearer ${access_token}` }
  return {
    tenantId: ws.tenantId,
    testKey: { name: `${name} test key`, world: name, mode: 'test', headers: key(ws.testKey) },
    liveKey: { name: `${name} live key`, world: name, mode: 'live', headers: key(ws.liveKey) },
    personTest: {
      name: `${name} person (test)`,
      world: name,
      mode: 'test',
      headers: { ...person, 'x-svc-mode': 'test' },
    },
    personLive: { name: `${name} person (live)`, world: name, mode: 'live', headers: person },
  }
}

let w: World
let v: World
let actors: Actor[]
beforeAll(async () => {
  ;[w, v] = await Promise.all([world('W'), world('V')])
  actors = [
    w.testKey,
    w.liveKey,
    w.personTest,
    w.personLive,
    v.testKey,
    v.liveKey,
    v.personTest,
    v.personLive,
  ]
})

const sameWorld = (a: Actor, b: Actor) => a.world === b.world && a.mode === b.mode
const othersOf = (creator: Actor) => actors.filter((a) => !sameWorld(a, creator))
const peersOf = (creator: Actor) => actors.filter((a) => sameWorld(a, creator))

/** The 404 of a resource that does not exist: what every other world must get, to the code. */
async function notFoundCode(actor: Actor, method: string, path: string, body?: unknown): Promise<string> {
  const res = await call(actor, method, path, body)
  const error = (await json<{ error: { code: string } }>(res, 404)).error
  return error.code
}

/** Mulberry32: a reproducible stream of choices (the seed is printed in the suite's name). */
function random(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
const SEED = Number(process.env.MODES_FUZZ_SEED ?? Date.now() % 100_000)
const rng = random(SEED)
const pick = <T>(items: readonly T[]): T => items[Math.floor(rng() * items.length)]!

/**
 * How a caller in another world might try to reach the resource anyway: the id as given or in
 * upper case, and claims of the creator's world (its mode in `x-svc-mode`, its tenant in
 * `x-svc-tenant`, its mode as a query parameter). A claim the credential cannot make is refused
 * for what it is (403 mode_mismatch or tenant_mismatch, whatever the id); anything else is the
 * not-found answer.
 */
function disguises(creator: Actor, creatorTenant: string, id: string) {
  const ids = [id, id.toUpperCase()]
  const claims: { headers: Record<string, string>; query: string }[] = [
    { headers: {}, query: '' },
    { headers: { 'x-svc-mode': creator.mode }, query: '' },
    { headers: { 'x-svc-tenant': creatorTenant }, query: '' },
    { headers: {}, query: `mode=${creator.mode}` },
  ]
  return { id: pick(ids), claim: pick(claims) }
}

const tenantOf = (actor: Actor) => (actor.world === 'W' ? w.tenantId : v.tenantId)
const isPerson = (actor: Actor) => actor.name.includes('person')

/** Each probe of another world is exactly the not-found answer of an id nobody has. */
async function expectHidden(
  creator: Actor,
  probes: { method: string; path: (id: string) => string; body?: unknown }[],
  id: string,
): Promise<void> {
  const ghost = crypto.randomUUID()
  for (const probe of probes) {
    const expected = await notFoundCode(creator, probe.method, probe.path(ghost), probe.body)
    for (const other of othersOf(creator)) {
      const plain = await call(other, probe.method, probe.path(id), probe.body)
      const text = await plain.text()
      expect(
        { status: plain.status, body: text.includes(expected) },
        `${other.name}: ${probe.method} ${probe.path(id)} of ${creator.name}'s resource answered ${text}`,
      ).toEqual({ status: 404, body: true })
      for (let round = 0; round < 3; round++) {
        const disguise = disguises(creator, tenantOf(creator), id)
        // A person may switch into the creator's mode of its own workspace: that is its world then.
        if (isPerson(other) && other.world === creator.world && disguise.claim.headers['x-svc-mode']) continue
        const path = probe.path(disguise.id)
        const target = disguise.claim.query
          ? `${path}${path.includes('?') ? '&' : '?'}${disguise.claim.query}`
          : path
        const res = await call(other, probe.method, target, probe.body, disguise.claim.headers)
        const answer = await res.text()
        const refusedClaim = res.status === 403 && /"code":"(mode_mismatch|tenant_mismatch)"/.test(answer)
        const notFound = res.status === 404 && answer.includes(expected)
        expect(
          refusedClaim || notFound,
          `seed ${SEED}: ${other.name} ${probe.method} ${target} ${JSON.stringify(disguise.claim.headers)} answered ${res.status} ${answer}`,
        ).toBe(true)
      }
    }
  }
}

/** Lists (and searches) of every other world leave the resource out; its own world's show it. */
async function expectListed(
  creator: Actor,
  list: (actor: Actor) => Promise<string[]>,
  id: string,
  seenBy: Actor[] = peersOf(creator),
): Promise<void> {
  for (const peer of seenBy) expect(await list(peer), `${peer.name} lists it`).toContain(id)
  for (const other of othersOf(creator)) {
    expect(await list(other), `${other.name} must not list ${creator.name}'s ${id}`).not.toContain(id)
  }
}

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

const creators = () => [w.testKey, w.liveKey, w.personTest, w.personLive]

describe(`test and live are separate worlds (${stack.kind}, seed ${SEED})`, () => {
  it('documents: another world gets 404 on read and delete, and no list or retrieval shows them', async () => {
    const source = `shared-source-${uniq()}.md`
    const created: { creator: Actor; id: string; word: string }[] = []
    for (const creator of creators()) {
      const word = `zebra${uniq()}`
      const res = await call(creator, 'POST', '/svc/documents/upload', {
        source,
        content: `The ${creator.mode} notes mention ${word} twice: ${word}.`,
      })
      const doc = await json<{ id: string; status: string }>(res, 200)
      // The same source in another world is a new document, not a replacement of someone else's.
      const first = created.every((c) => !sameWorld(c.creator, creator))
      expect(doc.status, `${creator.name} uploads ${source}`).toBe(first ? 'created' : 'replaced')
      created.push({ creator, id: doc.id, word })
    }
    for (const { creator, id, word } of created.filter(
      (c, i, all) => all.findLastIndex((d) => sameWorld(d.creator, c.creator)) === i,
    )) {
      await expectHidden(
        creator,
        [
          { method: 'GET', path: (x) => `/svc/documents/${x}` },
          { method: 'DELETE', path: (x) => `/svc/documents/${x}` },
        ],
        id,
      )
      await expectListed(
        creator,
        async (actor) => {
          const page = await json<{ data: { id: string }[] }>(
            await call(actor, 'GET', '/svc/documents?limit=100'),
            200,
          )
          return page.data.map((d) => d.id)
        },
        id,
      )
      await expectListed(
        creator,
        async (actor) => {
          const found = await json<{ data: { document_id: string }[] }>(
            await call(actor, 'POST', '/svc/documents/retrieve', { query: word, k: 10 }),
            200,
          )
          return found.data.map((d) => d.document_id)
        },
        id,
      )
      // The mode switch is a header, not a query parameter another world could add.
      for (const other of othersOf(creator)) {
        const res = await call(
          other,
          'GET',
          `/svc/documents/${id}?mode=${creator.mode}&tenantId=${w.tenantId}`,
        )
        expect([403, 404], `${other.name} with query tricks`).toContain(res.status)
      }
      expect((await call(creator, 'GET', `/svc/documents/${id}`)).status).toBe(200)
    }
  })

  it('memories: a person in one mode never lists or finds the memories it made in the other', async () => {
    for (const creator of creators()) {
      const word = `okapi${uniq()}`
      const memory = await json<{ id: string }>(
        await call(creator, 'POST', '/svc/memories', { content: `remember the ${word}` }),
        200,
      )
      await expectListed(
        creator,
        async (actor) => {
          const page = await json<{ data: { id: string }[] }>(
            await call(actor, 'GET', '/svc/memories?limit=100'),
            200,
          )
          return page.data.map((m) => m.id)
        },
        memory.id,
        [creator],
      )
      await expectListed(
        creator,
        async (actor) => {
          const found = await json<{ data: { id: string }[] }>(
            await call(actor, 'POST', '/svc/memories/search', { query: word, k: 10 }),
            200,
          )
          return found.data.map((m) => m.id)
        },
        memory.id,
        [creator],
      )
    }
  })

  it('feedback is stored in the mode of the credential that sent it', async () => {
    for (const creator of creators()) {
      const marker = `fb-${uniq()}`
      const receipt = await json<{ id: string }>(
        await call(creator, 'POST', '/svc/feedback', { rating: 5, marker }),
        200,
      )
      const mode = await withDatabase(async (db) => {
        const rows = await db.execute<{ mode: string }>(
          sql`select mode from feedback where id = ${receipt.id}::uuid`,
        )
        return rows.rows[0]?.mode
      })
      expect(mode, creator.name).toBe(creator.mode)
    }
  })

  it('reasoning jobs: read, receipt, erase and list are 404 or empty from another world; keys are per world', async () => {
    const idempotencyKey = `modes-${crypto.randomUUID()}`
    const jobs: { creator: Actor; id: string }[] = []
    for (const creator of [w.testKey, w.liveKey, w.personTest]) {
      const res = await call(
        creator,
        'POST',
        '/svc/quantum-reasoning/jobs',
        {
          prompt: `Which is larger, 2^10 or 10^3? (${creator.name})`,
          model: 'svc-hive',
          product: 'simulation_cloud',
        },
        // One Idempotency-Key in every world: a different request elsewhere is not a reuse (409).
        { 'idempotency-key': idempotencyKey },
      )
      const sameWorldBefore = jobs.find((j) => sameWorld(j.creator, creator))
      if (sameWorldBefore) {
        expect(res.status, `${creator.name} reuses its world's key`).toBe(409)
        continue
      }
      const { job } = await json<{ job: { id: string } }>(res, 202)
      jobs.push({ creator, id: job.id })
    }
    for (const { creator, id } of jobs) {
      await until(
        `job ${id} and its receipt`,
        async () => {
          const { job } = await json<{ job: { status: string; inference_receipt_id?: string | null } }>(
            await call(creator, 'GET', `/svc/quantum-reasoning/jobs/${id}`),
            200,
          )
          return job
        },
        // The receipt is issued moments after the job completes (signed, then logged).
        (job) => job.status === 'failed' || Boolean(job.inference_receipt_id),
      )
      await expectHidden(
        creator,
        [
          { method: 'GET', path: (x) => `/svc/quantum-reasoning/jobs/${x}` },
          { method: 'GET', path: (x) => `/svc/quantum-reasoning/jobs/${x}/receipt` },
          { method: 'DELETE', path: (x) => `/svc/quantum-reasoning/jobs/${x}` },
        ],
        id,
      )
      await expectListed(
        creator,
        async (actor) => {
          const page = await json<{ jobs: { id: string }[] }>(
            await call(actor, 'GET', '/svc/quantum-reasoning/jobs?limit=100'),
            200,
          )
          return page.jobs.map((j) => j.id)
        },
        id,
      )
      expect((await call(creator, 'GET', `/svc/quantum-reasoning/jobs/${id}/receipt`)).status).toBe(200)
    }
  })

  it('agent runs: status, cancel and the run index are 404 or empty from another world', async () => {
    const turn = (creator: Actor, runId: string) =>
      call(creator, 'POST', '/svc/code/v1/turns', {
        protocol: 'svc.code.v1',
        session_id: 'modes',
        run_id: runId,
        turn_id: 'turn-1',
        model: 'svc-cell',
        mode: 'plan',
        request: `Say hello (${creator.name})`,
        workspace: {},
        transcript: [],
        capabilities: {},
      })
    const owners = [w.testKey, w.personTest, w.personLive]
    // One run id in every world: each world gets a run of its own, in its own mode.
    const shared = crypto.randomUUID()
    for (const creator of owners) {
      const res = await turn(creator, shared)
      expect(res.status, `${creator.name}: ${await res.clone().text()}`).toBe(200)
      await res.text()
      const status = await json<{ test_mode: boolean }>(
        await call(creator, 'GET', `/svc/agents/runs/${shared}`),
        200,
      )
      expect(status.test_mode, creator.name).toBe(creator.mode === 'test')
    }
    const indexed = async (actor: Actor) => {
      const page = await json<{ data: { id: string }[] }>(
        await call(actor, 'GET', '/platform/v1/agent-runs?limit=100'),
        200,
      )
      return page.data.map((r) => r.id)
    }
    for (const creator of owners) {
      const runId = crypto.randomUUID()
      const res = await turn(creator, runId)
      expect(res.status, `${creator.name}: ${await res.clone().text()}`).toBe(200)
      await res.text()
      await until(
        'the run index',
        () => indexed(creator),
        (ids) => ids.includes(runId),
      )
      await expectHidden(
        creator,
        [
          { method: 'GET', path: (x) => `/svc/agents/runs/${x}` },
          { method: 'DELETE', path: (x) => `/svc/agents/runs/${x}` },
          { method: 'GET', path: (x) => `/platform/v1/agent-runs/${x}` },
          { method: 'POST', path: (x) => `/platform/v1/agent-runs/${x}/cancel` },
        ],
        runId,
      )
      await expectListed(creator, indexed, runId)
    }
  })

  it('provider connections: read, test, delete and list are 404 or empty from another world; names are per world', async () => {
    const name = `lab-${uniq()}`
    for (const creator of creators()) {
      const res = await call(creator, 'POST', '/svc/quantum-reasoning/provider-connections', {
        name,
        kind: 'ionq',
        api_key: ionq.keys.tenant,
        base_url: ionq.baseUrl,
      })
      const taken = creators()
        .slice(0, creators().indexOf(creator))
        .some((c) => sameWorld(c, creator))
      if (taken) {
        expect(res.status, `${creator.name} reuses its world's name`).toBe(409)
        continue
      }
      const connection = await json<{ id: string }>(res, 201)
      await expectHidden(
        creator,
        [
          { method: 'GET', path: (x) => `/svc/quantum-reasoning/provider-connections/${x}` },
          { method: 'POST', path: (x) => `/svc/quantum-reasoning/provider-connections/${x}/test` },
          { method: 'DELETE', path: (x) => `/svc/quantum-reasoning/provider-connections/${x}` },
        ],
        connection.id,
      )
      await expectListed(
        creator,
        async (actor) => {
          const page = await json<{ data: { id: string }[] }>(
            await call(actor, 'GET', '/svc/quantum-reasoning/provider-connections'),
            200,
          )
          return page.data.map((c) => c.id)
        },
        connection.id,
      )
      // byopa_managed from another world cannot name it either.
      for (const other of othersOf(creator)) {
        const job = await call(
          other,
          'POST',
          '/svc/quantum-reasoning/jobs',
          { prompt: 'p', model: 'svc-hive', product: 'byopa_managed', provider_connection_id: connection.id },
          { 'idempotency-key': `modes-${crypto.randomUUID()}` },
        )
        const body = await job.text()
        expect(job.status, `${other.name}: ${body}`).toBe(404)
        expect(body).toContain('provider_connection_not_found')
      }
    }
  })

  it("usage: the report and the request log show only the caller's world", async () => {
    const requests: { creator: Actor; requestId: string }[] = []
    for (const creator of creators()) {
      const res = await call(creator, 'POST', '/svc/chat/completions', {
        model: 'svc-cell',
        messages: [{ role: 'user', content: `usage probe ${uniq()}` }],
      })
      expect(res.status, await res.clone().text()).toBe(200)
      requests.push({ creator, requestId: res.headers.get('x-request-id')! })
    }
    const log = async (actor: Actor, query = '') => {
      const page = await json<{ data: { request_id: string }[] }>(
        await call(actor, 'GET', `/platform/v1/usage/requests?limit=100${query}`),
        200,
      )
      return page.data.map((r) => r.request_id)
    }
    for (const { creator, requestId } of requests) {
      await until(
        `usage of ${requestId}`,
        () => log(creator),
        (ids) => ids.includes(requestId),
      )
      await expectListed(creator, (actor) => log(actor), requestId)
      // Asking for the other mode by name shows nothing of it.
      for (const other of othersOf(creator)) {
        expect(await log(other, `&mode=${creator.mode}`), other.name).not.toContain(requestId)
      }
    }
    for (const actor of actors) {
      const report = await json<{ data: { mode: string }[] }>(
        await call(actor, 'GET', '/platform/v1/usage?days=1&mode=test'),
        200,
      )
      for (const row of report.data) expect(row.mode, actor.name).toBe(actor.mode)
    }
  })

  it('the mode header: only a person chooses; a key naming the other mode is refused; nonsense is a 400', async () => {
    const naming = async (actor: Actor, value: string) =>
      (await call(actor, 'GET', '/svc/documents', undefined, { 'x-svc-mode': value })).status
    expect(await naming(w.testKey, 'live')).toBe(403)
    expect(await naming(w.liveKey, 'test')).toBe(403)
    expect(await naming(w.testKey, 'test')).toBe(200)
    for (const value of ['TEST', 'staging', 'test,live', '']) {
      expect(await naming(w.personLive, value), JSON.stringify(value)).toBe(value === '' ? 200 : 400)
    }
  })

  it('the OpenAPI document offers x-svc-mode on every credential route, and only there', async () => {
    const doc = (await (await fetch(`${stack.baseUrl}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { security?: unknown[]; parameters?: { $ref?: string }[] }>>
      components: { parameters: Record<string, { name: string; in: string; schema: { enum: string[] } }> }
    }
    expect(doc.components.parameters.Mode).toMatchObject({
      name: 'x-svc-mode',
      in: 'header',
      schema: { enum: ['test', 'live'] },
    })
    const withMode = (op: { parameters?: { $ref?: string }[] }) =>
      (op.parameters ?? []).some((p) => p.$ref === '#/components/parameters/Mode')
    expect(withMode(doc.paths['/svc/documents']!.get!)).toBe(true)
    expect(withMode(doc.paths['/svc/quantum-reasoning/jobs/{jobId}/receipt']!.get!)).toBe(true)
    expect(withMode(doc.paths['/svc/models']!.get!)).toBe(false)
  })

  it("the console's test/live switch shows that mode's documents", async () => {
    const marker = uniq()
    for (const creator of [w.testKey, w.liveKey]) {
      await json(
        await call(creator, 'POST', '/svc/documents/upload', {
          source: `console-${creator.mode}-${marker}.md`,
          content: `console ${creator.mode} document`,
        }),
        200,
      )
    }
    const session = await consoleSession(w)
    for (const mode of ['test', 'live'] as const) {
      const page = await fetch(`${stack.baseUrl}/console/documents`, {
        headers: { cookie: `${session}; __Host-svc_console_mode=${mode}` },
        redirect: 'manual',
      })
      const html = await page.text()
      expect(page.status, html.slice(0, 300)).toBe(200)
      expect(html).toContain(`console-${mode}-${marker}.md`)
      expect(html).not.toContain(`console-${mode === 'test' ? 'live' : 'test'}-${marker}.md`)
    }
  })
})

/** Signs the workspace's owner in to the console over plain HTTP; the session cookie. */
async function consoleSession(ws: World): Promise<string> {
  const email = await withDatabase(async (db) => {
    const found = await db.execute<{ email: string }>(sql`
      select u.email from users u join members m on m.user_id = u.id where m.tenant_id = ${ws.tenantId}::uuid`)
    return found.rows[0]!.email
  })
  const password = generatePassword()
  await withDatabase((db) => setUserPassword(db, email, password))
  const form = await fetch(`${stack.baseUrl}/console/sign-in`)
  const seed = form.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .join('; ')
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? ''
  const signedIn = await fetch(`${stack.baseUrl}/console/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      cookie: seed,
      origin: new URL(stack.baseUrl).origin,
      'content-type': 'application/x-www-form-urlencoded',
      'cf-connecting-ip': address(),
    },
    body: new URLSearchParams({ email, password, _csrf: csrf, next: '/console/overview' }).toString(),
  })
  expect(signedIn.status, await signedIn.clone().text()).toBe(303)
  const cookie = signedIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .find((c) => c.startsWith('__Host-svc_console='))
  expect(cookie).toBeDefined()
  return cookie!
}
