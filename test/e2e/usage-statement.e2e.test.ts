/**
 * A key's signed usage statement end to end (docs/plans.md, "Usage statements"): a key makes JSON
 * and streamed chat completions with the official `openai` SDK and keeps its own record of what it
 * received (request id, model, tokens, status); its statement must hold exactly those requests,
 * each once, whether their rows were still in the tenant's RateLimiter object or already in
 * Postgres. The statement is then checked with tools that are not the product's, as its holder
 * would offline: the DSSE signature with the public JWKS and liboqs (ML-DSA-65), the audit entry's
 * digest with Node's sha256, the inclusion proof with the independent RFC 9162 verifier, the
 * checkpoint with sigstore's signed-note verifier and liboqs (ML-DSA-44). Tenancy and mode: another
 * workspace's key, or a key of the other mode, is 404.
 */
import { createHash } from 'node:crypto'
import { sql } from 'drizzle-orm'
import OpenAI from 'openai'
import { beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'
import * as merkle from '../support/independent-merkle.ts'
import {
  verifyCosignatureWithLiboqs,
  verifyDsseWithJwks,
  verifyNoteWithSigstore,
} from '../support/independent-signatures.ts'
import { fileStack } from './file-stack.ts'

const stack = await fileStack()
const url = (p: string) => `${stack.baseUrl}${p}`

async function api<T>(credential: string, method: string, path: string, body?: unknown) {
  const res = await fetch(url(path), {
    method,
    headers: {
      authorization: `Bearer ${credential}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await res.text()
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T }
}

interface Checkpoint {
  origin: string
  tree_size: number
  root_hash: string
  note: string
}

interface Row {
  request_id: string
  resource: { type: string; id: string } | null
  endpoint: string
  model: string
  prompt_tokens: number
  completion_tokens: number
  cost_usd: string
  status: number | null
  estimated: boolean
  created_at: string
}

interface Statement {
  _type: string
  statement_id: string
  generated_at: string
  tenant_id: string
  key_id: string
  mode: string
  period: { kind: string; start: string; end: string | null }
  rows: Row[]
  totals: { requests: number; prompt_tokens: number; completion_tokens: number; cost_usd: string }
}

interface StatementResponse {
  object: 'usage_statement'
  statement_id: string
  envelope: { payloadType: string; payload: string; signatures: { keyid: string; sig: string }[] }
  statement: Statement
  jwks_url: string
  audit_log: {
    index: number
    tree_size: number
    leaf_hash: string
    entry: string
    proof: string[]
    checkpoint: Checkpoint
  }
}

/** What the client itself saw of each request it made. */
interface Received {
  requestId: string
  model: string
  promptTokens: number
  completionTokens: number
  status: number
}

const client = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${stack.baseUrl}/svc`, maxRetries: 0 })

async function jsonCompletion(key: string, model: string, text: string): Promise<Received> {
  const { data, request_id, response } = await client(key)
    .chat.completions.create({ model, messages: [{ role: 'user', content: text }] })
    .withResponse()
  return {
    requestId: request_id!,
    model: data.model,
    promptTokens: data.usage!.prompt_tokens,
    completionTokens: data.usage!.completion_tokens,
    status: response.status,
  }
}

async function streamedCompletion(key: string, model: string, text: string): Promise<Received> {
  const {
    data: stream,
    request_id,
    response,
  } = await client(key)
    .chat.completions.create({
      model,
      messages: [{ role: 'user', content: text }],
      stream: true,
      stream_options: { include_usage: true },
    })
    .withResponse()
  let usage: { prompt_tokens: number; completion_tokens: number } | null = null
  for await (const chunk of stream) if (chunk.usage) usage = chunk.usage
  // The stream ended with [DONE]: its usage is stored before that left the service.
  return {
    requestId: request_id!,
    model,
    promptTokens: usage!.prompt_tokens,
    completionTokens: usage!.completion_tokens,
    status: response.status,
  }
}

const asRecord = (rows: readonly Row[]) =>
  rows
    .map((r) => ({
      requestId: r.request_id,
      model: r.model,
      promptTokens: r.prompt_tokens,
      completionTokens: r.completion_tokens,
      status: r.status,
    }))
    .sort((a, b) => a.requestId.localeCompare(b.requestId))
const sorted = (received: readonly Received[]) =>
  [...received].sort((a, b) => a.requestId.localeCompare(b.requestId))

/** Rows of the key already flushed to Postgres. */
async function inPostgres(keyId: string): Promise<string[]> {
  useWebSocketConstructor(WebSocket)
  const database = openDatabase(stack.database, { max: 1 })
  try {
    const { rows } = await database.db.execute<{ request_id: string }>(
      sql`select request_id from usage_ledger where tenant_id = ${stack.tenantA.id}::uuid and principal = ${`key:${keyId}`}`,
    )
    return rows.map((r) => r.request_id)
  } finally {
    await database.close()
  }
}

let logKeys: { ed25519: Uint8Array; mlDsa44: Uint8Array }
// A key the workspace hands out: test mode, scoped to chat only, member role.
let handedOut: { id: string; key: string }

beforeAll(async () => {
  const keys = await api<{ keys: { alg: string; public_key: string; state: string }[] }>(
    stack.tenantA.testKey,
    'GET',
    '/platform/v1/audit-log/keys',
  )
  const key = (alg: string) =>
    merkle.fromBase64(keys.body.keys.find((k) => k.alg === alg && k.state === 'signing')!.public_key)
  logKeys = { ed25519: key('EdDSA'), mlDsa44: key('ML-DSA-44') }
  const made = await api<{ id: string; key: string }>(
    stack.tenantA.testKey,
    'POST',
    '/platform/v1/api-keys',
    {
      name: 'statement e2e',
      mode: 'test',
      role: 'member',
      scopes: ['chat:write'],
    },
  )
  expect(made.status).toBe(201)
  handedOut = made.body
})

/** Verifies everything a holder can check offline; returns the signed statement. */
async function verifyOffline(res: StatementResponse): Promise<Statement> {
  // 1. The signature: ML-DSA-65 with the public JWKS, by liboqs; the payload is what was signed.
  const jwks = await (await fetch(res.jwks_url)).json()
  expect(await verifyDsseWithJwks(res.envelope, jwks)).toEqual(['ML-DSA-65'])
  expect(res.envelope.payloadType).toBe('application/vnd.svc.usage-statement.v1+json')
  const payload = Buffer.from(res.envelope.payload, 'base64')
  const statement = JSON.parse(payload.toString('utf8')) as Statement
  expect(statement).toEqual(res.statement)
  const forged = {
    ...res.envelope,
    // One request fewer billed: the signature no longer holds.
    payload: Buffer.from(
      JSON.stringify({
        ...statement,
        totals: { ...statement.totals, requests: statement.totals.requests - 1 },
      }),
    ).toString('base64'),
  }
  expect(await verifyDsseWithJwks(forged, jwks)).toEqual([])

  // 2. The log: the entry names this statement and the sha256 of exactly these bytes.
  const entry = JSON.parse(res.audit_log.entry) as { index: number; event: Record<string, unknown> }
  expect(entry.index).toBe(res.audit_log.index)
  expect(entry.event).toMatchObject({
    kind: 'usage_statement.issued',
    statement_id: statement.statement_id,
    statement_digest: `sha256:${createHash('sha256').update(payload).digest('hex')}`,
    key_id: statement.key_id,
    requests: statement.rows.length,
    kid: res.envelope.signatures[0]!.keyid,
    alg: 'ML-DSA-65',
  })

  // 3. The entry is in the log the checkpoint signs: sigstore (Ed25519) and liboqs (ML-DSA-44),
  // then RFC 9162 inclusion against the checkpoint's root.
  const checkpoint = res.audit_log.checkpoint
  const head = verifyNoteWithSigstore(checkpoint.note, checkpoint.origin, logKeys.ed25519)
  expect(
    (await verifyCosignatureWithLiboqs(checkpoint.note, checkpoint.origin, logKeys.mlDsa44)).verified,
  ).toBe(true)
  expect(checkpoint.origin).toContain(stack.tenantA.id)
  expect(Number(head.logSize)).toBe(res.audit_log.tree_size)
  const leaf = await merkle.leafHashOf(new TextEncoder().encode(res.audit_log.entry))
  expect(Buffer.from(leaf).toString('base64')).toBe(res.audit_log.leaf_hash)
  expect(
    await merkle.verifyInclusionRfc(
      BigInt(res.audit_log.index),
      BigInt(head.logSize),
      leaf,
      res.audit_log.proof.map(merkle.fromBase64),
      new Uint8Array(head.logHash),
    ),
  ).toBe(true)
  // A proof of another entry's hash does not verify.
  const other = await merkle.leafHashOf(new TextEncoder().encode(`${res.audit_log.entry} `))
  expect(
    await merkle.verifyInclusionRfc(
      BigInt(res.audit_log.index),
      BigInt(head.logSize),
      other,
      res.audit_log.proof.map(merkle.fromBase64),
      new Uint8Array(head.logHash),
    ),
  ).toBe(false)
  return statement
}

describe('usage statements', () => {
  it('holds each request the key made exactly once, unflushed or flushed, and verifies offline', async () => {
    const statementPath = `/platform/v1/api-keys/${handedOut.id}/usage-statement`
    const received: Received[] = []
    received.push(await jsonCompletion(handedOut.key, 'svc-cell', 'first, as JSON'))
    received.push(await streamedCompletion(handedOut.key, 'svc-comb', 'second, streamed'))
    received.push(await jsonCompletion(handedOut.key, 'svc-comb', 'third, as JSON'))
    received.push(await streamedCompletion(handedOut.key, 'svc-cell', 'fourth, streamed'))
    expect(new Set(received.map((r) => r.requestId)).size).toBe(4)

    // The key reads its own statement (chat scope only), at once: rows may still be in the object.
    const first = await api<StatementResponse>(handedOut.key, 'GET', statementPath)
    expect(first.status).toBe(200)
    const statement = await verifyOffline(first.body)
    expect(statement).toMatchObject({
      _type: 'https://svc.dev/usage-statement/v1',
      tenant_id: stack.tenantA.id,
      key_id: handedOut.id,
      mode: 'test',
      period: { kind: 'month' },
    })
    expect(asRecord(statement.rows)).toEqual(sorted(received))
    expect(statement.totals).toEqual({
      requests: 4,
      prompt_tokens: received.reduce((n, r) => n + r.promptTokens, 0),
      completion_tokens: received.reduce((n, r) => n + r.completionTokens, 0),
      cost_usd: '0.000000',
    })
    const month = new Date()
    expect(statement.period.start).toBe(
      new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth(), 1)).toISOString(),
    )

    // Once the object has flushed those rows to Postgres, more requests: the next statement
    // merges rows from both places, still each request once.
    await expect.poll(async () => (await inPostgres(handedOut.id)).length, { timeout: 20_000 }).toBe(4)
    received.push(await jsonCompletion(handedOut.key, 'svc-cell', 'fifth, as JSON'))
    received.push(await streamedCompletion(handedOut.key, 'svc-cell', 'sixth, streamed'))
    // `current`: the calling key, for a holder that knows only its secret.
    const second = await api<StatementResponse>(
      handedOut.key,
      'GET',
      '/platform/v1/api-keys/current/usage-statement',
    )
    expect(second.status).toBe(200)
    const again = await verifyOffline(second.body)
    expect(asRecord(again.rows)).toEqual(sorted(received))
    expect(again.totals.requests).toBe(6)
    expect(again.key_id).toBe(handedOut.id)
    expect(again.statement_id).not.toBe(statement.statement_id)
    expect(second.body.audit_log.index).toBeGreaterThan(first.body.audit_log.index)

    // An owner reads it too, for the day and for all time; last month held none of these.
    const owner = stack.tenantA.testKey
    const day = await api<StatementResponse>(owner, 'GET', `${statementPath}?period=day`)
    expect(day.status).toBe(200)
    expect(day.body.statement.period.kind).toBe('day')
    expect(asRecord(day.body.statement.rows)).toEqual(sorted(received))
    const total = await api<StatementResponse>(owner, 'GET', `${statementPath}?period=total`)
    expect(total.body.statement.period).toEqual({
      kind: 'total',
      start: new Date(0).toISOString(),
      end: null,
    })
    expect(total.body.statement.totals.requests).toBe(6)
    const lastMonth = new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth(), 0)).toISOString()
    const earlier = await api<StatementResponse>(
      owner,
      'GET',
      `${statementPath}?period=month&at=${encodeURIComponent(lastMonth)}`,
    )
    expect(earlier.status).toBe(200)
    expect(earlier.body.statement.rows).toEqual([])
    expect(earlier.body.statement.period.end).toBe(statement.period.start)
    const future = await api<{ error: { code: string } }>(
      owner,
      'GET',
      `${statementPath}?at=${encodeURIComponent(new Date(Date.now() + 86_400_000).toISOString())}`,
    )
    expect(future.status).toBe(400)
  })

  it("another workspace's key, a key of the other mode, or another key's statement for a scoped key: 404", async () => {
    const other = await api<{ data: { id: string; mode: string }[] }>(
      stack.tenantB.testKey,
      'GET',
      '/platform/v1/api-keys',
    )
    const tenantBKey = other.body.data.find((k) => k.mode === 'test')!.id
    const mine = await api<{ data: { id: string; mode: string; name: string }[] }>(
      stack.tenantA.testKey,
      'GET',
      '/platform/v1/api-keys',
    )
    const ownerTestKey = mine.body.data.find((k) => k.name === 'A test')!.id
    const notFound = async (credential: string, keyId: string) => {
      const res = await api<{ error: { code: string } }>(
        credential,
        'GET',
        `/platform/v1/api-keys/${keyId}/usage-statement`,
      )
      return [res.status, res.body.error.code]
    }
    // Another workspace's key, from either side.
    expect(await notFound(stack.tenantA.testKey, tenantBKey)).toEqual([404, 'api_key_not_found'])
    expect(await notFound(stack.tenantB.testKey, handedOut.id)).toEqual([404, 'api_key_not_found'])
    // A live credential of the same workspace does not see a test key's usage.
    expect(await notFound(stack.tenantA.liveKey, handedOut.id)).toEqual([404, 'api_key_not_found'])
    // The chat-scoped key reads its own statement only.
    expect(await notFound(handedOut.key, ownerTestKey)).toEqual([404, 'api_key_not_found'])
  })
})
