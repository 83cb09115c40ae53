/**
 * A key's spend limit holds across a SIGKILL of `npm start` (docs/plans.md, "Per-key limits"): a
 * burst on a key whose limit is worth about 20 requests is cut by killing the whole process group,
 * the stack starts again on the same data folder, and a second burst follows. What the key spent in
 * all (its ledger rows in Postgres at list price, each request once) never exceeds its limit: the
 * spend comes back from the RateLimiter's own rows and Postgres, and the worst cases reserved by
 * requests in flight at the crash are still held (they are stored with the admission).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { sql } from 'drizzle-orm'
import { afterAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'
import { listCostUnits, worstCaseCostUnits } from '../../shared/metering/key-spend.ts'
import { PLAN_CATALOG } from '../../shared/plans/plan-catalog.ts'
import { countPromptTokens } from '../../shared/providers/tokenizer.ts'
import { launchStack, type RunningStack } from '../support/stack-process.ts'

const MAX_TOKENS = 48
const TEXT = 'How many legs has a bee?'
const messages = [{ role: 'user' as const, content: TEXT }]
const WORST = worstCaseCostUnits(
  PLAN_CATALOG,
  'svc-cell',
  countPromptTokens(messages, undefined) + MAX_TOKENS,
  undefined,
)
const LIMIT = 20 * WORST

function burst(stack: RunningStack, key: string, n: number): Promise<Response | null>[] {
  return Array.from({ length: n }, () =>
    fetch(`${stack.baseUrl}/svc/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'svc-cell', messages, max_tokens: MAX_TOKENS }),
    }).catch(() => null),
  )
}

describe('a spend-limited key across a SIGKILL of npm start', () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-e2e-key-crash-'))
  let running: RunningStack | null = null

  afterAll(async () => {
    await running?.stop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('spends at most its limit in all, and refuses with the action-required body after the restart', async () => {
    running = await launchStack({ dataDir })
    const first = running
    const created = await fetch(`${first.baseUrl}/platform/v1/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${first.credentials.testKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'crash budget',
        mode: 'test',
        spend_limit: { amount_usd: LIMIT / 1e6, period: 'month' },
      }),
    })
    expect(created.status, await created.clone().text()).toBe(201)
    const key = (await created.json()) as { id: string; key: string }

    // The crash lands while the burst is in flight: once a few answers are in.
    const inFlight = burst(first, key.key, 64)
    let answered = 0
    await Promise.race([
      Promise.all(
        inFlight.map((p) =>
          p.then(() => {
            answered += 1
          }),
        ),
      ),
      (async () => {
        while (answered < 4) await new Promise((resolve) => setTimeout(resolve, 5))
      })(),
    ])
    await first.kill()
    await Promise.all(inFlight)

    running = await launchStack({ dataDir })
    const second = running
    const after = await Promise.all(burst(second, key.key, 64))
    const refused = after.filter((res) => res?.status === 402)
    expect(refused.length).toBeGreaterThan(0)
    const body = (await refused[0]!.json()) as {
      svc_upgrade: { reason: string; binding_limit: { kind: string } }
    }
    expect(body.svc_upgrade).toMatchObject({
      reason: 'overage_cap_reached',
      binding_limit: { kind: 'credits' },
    })
    for (const res of after) if (res && res.status !== 402) expect(res.status).toBe(200)

    // Everything the key was billed for, once the RateLimiter has flushed: within the limit.
    useWebSocketConstructor(WebSocket)
    const database = openDatabase(second.database, { max: 1 })
    try {
      let spent = 0
      let rows = 0
      for (let i = 0; i < 40; i++) {
        const result = await database.db.execute<{
          model: 'svc-cell'
          prompt_tokens: number
          completion_tokens: number
          cached_tokens: number
          quantity: number
        }>(sql`select model, prompt_tokens, completion_tokens, cached_tokens, quantity::int as quantity
               from usage_ledger where principal = ${`key:${key.id}`}`)
        spent = result.rows.reduce(
          (sum, r) =>
            sum +
            listCostUnits(PLAN_CATALOG, {
              model: r.model,
              promptTokens: r.prompt_tokens,
              completionTokens: r.completion_tokens,
              cachedTokens: r.cached_tokens,
              quantity: r.quantity,
            }),
          0,
        )
        if (result.rows.length === rows && i > 4) break
        rows = result.rows.length
        await new Promise((resolve) => setTimeout(resolve, 500))
      }
      expect(rows).toBeGreaterThan(0)
      expect(spent).toBeLessThanOrEqual(LIMIT)
    } finally {
      await database.close()
    }
  }, 240_000)
})
