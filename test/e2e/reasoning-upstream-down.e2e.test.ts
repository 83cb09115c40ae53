/**
 * A reasoning job whose upstream keeps failing is retried with backoff, then failed with a clear
 * error. On a stack of its own (`npm start`, its own data folder and embedded database) with the
 * suite's fake upstream and provider config: the failures open the reasoning worker's circuit
 * breaker for the provider (60 s), which on the shared stack would fail the live jobs of every
 * file running beside this one. The rest of the reasoning jobs' behaviour: reasoning.e2e.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { launchStack, type RunningStack } from '../support/stack-process.ts'
import { upstreamControl } from './fakes/openai-upstream.fake.ts'
import { shapeErrors } from './reasoning-schemas.ts'

const fixture = inject('stack')
const shared = fixture.fakes['openai-upstream'] as { controlUrl: string; env: Record<string, string> }
const upstream = upstreamControl(shared.controlUrl)

interface Job {
  id: string
  status: string
  attempt_count: number
  max_attempts: number
  error?: { code: string; message: string } | null
}

describe(`reasoning jobs: upstream faults (${fixture.kind})`, () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-e2e-reasoning-upstream-'))
  let stack: RunningStack

  beforeAll(async () => {
    // The retry settings of the shared stack (test/e2e/stack.setup.ts), so the job gives up in seconds.
    stack = await launchStack({
      dataDir,
      env: { ...shared.env, REASONING_RETRY_BASE_MS: '200', REASONING_RETRY_MAX_MS: '1000' },
    })
  })

  afterAll(async () => {
    await stack?.stop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  async function jobOf(res: Response): Promise<Job> {
    const body = (await res.json()) as { job: Job }
    expect(shapeErrors('envelope', body)).toEqual([])
    return body.job
  }

  it('an upstream that keeps failing: retried with backoff, then failed with a clear error', async () => {
    const t = `[t-${crypto.randomUUID().slice(0, 8)}]`
    await upstream.script({ match: { contains: t }, fault: { kind: 'status', status: 500 } })
    const jobs = `${stack.baseUrl}/svc/quantum-reasoning/jobs`
    const auth = { authorization: `Bearer ${stack.credentials.liveKey}` }
    const created = await fetch(jobs, {
      method: 'POST',
      headers: {
        ...auth,
        'content-type': 'application/json',
        'idempotency-key': `e2e-${crypto.randomUUID()}`,
      },
      body: JSON.stringify({
        prompt: `Which is larger, 2^10 or 10^3? ${t}`,
        model: 'svc-hive',
        product: 'simulation_cloud',
      }),
    })
    expect(created.status, await created.clone().text()).toBe(202)
    const queued = await jobOf(created)
    const deadline = Date.now() + 60_000
    let failed = queued
    while (!['failed', 'completed'].includes(failed.status)) {
      if (Date.now() > deadline) throw new Error(`job ${queued.id} is still ${failed.status}`)
      await new Promise((r) => setTimeout(r, 100))
      failed = await jobOf(await fetch(`${jobs}/${queued.id}`, { headers: auth }))
    }
    expect(failed.status).toBe('failed')
    expect(failed.attempt_count).toBe(failed.max_attempts)
    expect(failed.error?.code).toBe('upstream_unavailable')
    expect(failed.error?.message).toMatch(/gave up after 4 attempts/)
  })
})
