/**
 * Helpers for the chat end-to-end tests: workspaces on any plan with a preset balance (created
 * through the running stack's database, like the global setup does), raw HTTP calls, SSE
 * parsing, the fake upstream's control endpoint, and reading the usage ledger.
 */
import { sql } from 'drizzle-orm'
import { inject } from 'vitest'
import WebSocket from 'ws'
import { ensureWorkspace } from '../../scripts/db/seed.ts'
import { generateApiKey } from '../../shared/auth/api-keys.ts'
import { type Drizzle, openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'
import { METERED_TOOL_UNITS, type MeteredTool } from '../../shared/plans/plan-catalog.ts'
import { upstreamControl } from './fakes/openai-upstream.fake.ts'

export const stack = inject('stack')
export const upstream = upstreamControl(String(stack.fakes['openai-upstream']?.controlUrl))
export const COMPLETIONS_URL = `${stack.baseUrl}/svc/chat/completions`

useWebSocketConstructor(WebSocket)

export async function withDatabase<T>(work: (db: Drizzle) => Promise<T>): Promise<T> {
  const database = openDatabase(stack.database, { max: 1 })
  try {
    return await work(database.db)
  } finally {
    await database.close()
  }
}

/** A tag to put in a message so the fake upstream's rules and records apply to this test only. */
export function tag(label = 't'): string {
  return `[${label}-${crypto.randomUUID().slice(0, 8)}]`
}

export interface Workspace {
  tenantId: string
  liveKey: string
  testKey: string
}

export interface BalancePreset {
  tokensUsed?: number
  creditsCents?: string
  overageCents?: string
  usageCreditsEnabled?: boolean
  spendCapCents?: number | null
  /** Live tokens already used this month per model (ledger rows dated now). */
  modelTokens?: Record<string, number>
  /** Live use of paid tools this month, in their units (ledger rows dated now). */
  toolUse?: Partial<Record<MeteredTool, number>>
}

/** A fresh tenant on `planId` with a live and a test key, and optionally this month's balance. */
export async function createWorkspace(planId: string, preset?: BalancePreset): Promise<Workspace> {
  const liveKey = generateApiKey('live')
  const testKey = generateApiKey('test')
  const suffix = crypto.randomUUID().slice(0, 8)
  return withDatabase(async (db) => {
    const { tenantId } = await ensureWorkspace(db, {
      tenantName: `chat ${planId} ${suffix}`,
      planId,
      ownerEmail: `chat-${planId}-${suffix}@example.test`,
      keys: [
        { name: 'live', key: liveKey },
        { name: 'test', key: testKey },
      ],
    })
    if (preset) {
      const now = new Date()
      const periodStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString()
      await db.execute(sql`
        insert into tenant_balances (tenant_id, period_start, tokens_used, credits_balance_cents, overage_cents,
          usage_credits_enabled, spend_cap_cents)
        values (${tenantId}::uuid, ${periodStart}::timestamptz, ${preset.tokensUsed ?? 0},
          ${preset.creditsCents ?? '0'}::numeric, ${preset.overageCents ?? '0'}::numeric,
          ${preset.usageCreditsEnabled ?? false}, ${preset.spendCapCents ?? null})`)
      for (const [model, tokens] of Object.entries(preset.modelTokens ?? {})) {
        await db.execute(sql`
          insert into usage_ledger (tenant_id, request_id, principal, mode, endpoint, model, provider,
            prompt_tokens, completion_tokens, credits_cents)
          values (${tenantId}::uuid, ${`seed-${crypto.randomUUID()}`}, 'seed', 'live', 'chat.completions',
            ${model}, 'seed', ${tokens}, 0, 0)`)
      }
      for (const [tool, quantity] of Object.entries(preset.toolUse ?? {})) {
        await db.execute(sql`
          insert into usage_ledger (tenant_id, request_id, principal, mode, endpoint, model, provider,
            prompt_tokens, completion_tokens, credits_cents, unit, quantity)
          values (${tenantId}::uuid, ${`seed-${crypto.randomUUID()}`}, 'seed', 'live', 'code.search',
            ${tool}, 'seed', 0, 0, 0, ${METERED_TOOL_UNITS[tool as MeteredTool]}, ${quantity})`)
      }
    }
    return { tenantId, liveKey, testKey }
  })
}

export function chat(
  key: string,
  body: unknown,
  headers: Record<string, string> = {},
  init: RequestInit = {},
): Promise<Response> {
  return fetch(COMPLETIONS_URL, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    ...init,
  })
}

export interface SseResult {
  /** Parsed `data:` payloads other than [DONE]. */
  events: Record<string, unknown>[]
  done: boolean
  raw: string
}

export async function readSse(response: Response): Promise<SseResult> {
  const raw = await response.text()
  const events: Record<string, unknown>[] = []
  let done = false
  for (const block of raw.split('\n\n')) {
    const data = block
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => line.slice(6))
      .join('\n')
    if (!data) continue
    if (data === '[DONE]') done = true
    else events.push(JSON.parse(data) as Record<string, unknown>)
  }
  return { events, done, raw }
}

export interface LedgerRow {
  request_id: string
  mode: string
  endpoint: string
  model: string
  provider: string
  principal: string
  prompt_tokens: number
  completion_tokens: number
  cached_tokens: number
  reasoning_tokens: number
  unit: string
  quantity: number
  credits_cents: string
  estimated: boolean
  /** The status the client received; null for a request billed from its last checkpoint. */
  status: number | null
  latency_ms: number | null
}

export async function ledgerRows(tenantId: string): Promise<LedgerRow[]> {
  return withDatabase(async (db) => {
    const result = await db.execute<LedgerRow & Record<string, unknown>>(sql`
      select request_id, mode, endpoint, model, provider, principal, prompt_tokens, completion_tokens,
        cached_tokens, reasoning_tokens, unit, quantity::int as quantity, credits_cents::text as credits_cents,
        estimated, status, latency_ms
      from usage_ledger where tenant_id = ${tenantId}::uuid and principal <> 'seed' order by created_at`)
    return result.rows
  })
}

/** Polls the ledger until `done` holds (the object flushes about once a second). */
export async function waitForLedger(
  tenantId: string,
  done: (rows: LedgerRow[]) => boolean,
  timeoutMs = 15_000,
): Promise<LedgerRow[]> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const rows = await ledgerRows(tenantId)
    if (done(rows)) return rows
    if (Date.now() > deadline)
      throw new Error(`ledger did not reach the expected state: ${JSON.stringify(rows)}`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

export async function balanceOf(tenantId: string): Promise<{
  tokens_used: string
  credits_balance_cents: string
  overage_cents: string
}> {
  return withDatabase(async (db) => {
    const result = await db.execute<Record<string, string>>(sql`
      select tokens_used::text as tokens_used, credits_balance_cents::text as credits_balance_cents,
        overage_cents::text as overage_cents
      from tenant_balances where tenant_id = ${tenantId}::uuid`)
    const row = result.rows[0]
    if (!row) throw new Error(`no balance row for ${tenantId}`)
    return row as { tokens_used: string; credits_balance_cents: string; overage_cents: string }
  })
}
