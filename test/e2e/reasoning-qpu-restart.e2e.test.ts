/**
 * A stack killed while a real-hardware job is awaiting_qpu loses nothing: a stack of its own
 * (`npm start`, its own data folder) on the suite's fake model upstream and fake IonQ, the job's
 * provider job held in the provider's queue, the stack SIGKILLed (the local queue's messages die
 * with it), started again on the same data: the job's object re-sends its message from storage and
 * the job completes on the one provider job it had.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { sql } from 'drizzle-orm'
import { afterAll, describe, expect, inject, it } from 'vitest'
import WebSocket from 'ws'
import { openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'
import { createScratchDatabase } from '../support/scratch-postgres.ts'
import { launchStack, type RunningStack } from '../support/stack-process.ts'
import { ionqControl } from './fakes/ionq.fake.ts'

const fixture = inject('stack')
const ionqFixture = fixture.fakes.ionq as { controlUrl: string; baseUrl: string }
const upstreamEnv = (fixture.fakes['openai-upstream'] as { env: Record<string, string> }).env
const ionq = ionqControl(ionqFixture.controlUrl)
useWebSocketConstructor(WebSocket)

describe(`a restart while awaiting_qpu (${fixture.kind})`, () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-e2e-qpu-restart-'))
  let running: RunningStack | null = null
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>> | null = null

  afterAll(async () => {
    await running?.stop()
    await scratch?.drop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('the job completes on its one provider job after the stack was killed', async () => {
    scratch = fixture.kind === 'postgres' ? await createScratchDatabase() : null
    const databaseUrl = scratch?.url
    const env = {
      ...upstreamEnv,
      QPU_PROVIDER_BASE_URLS: ionqFixture.baseUrl,
      QPU_REDRIVE_SECONDS: '3',
      QPU_POLL_INTERVAL_SECONDS: '1',
      QPU_RETRY_MAX_DELAY_SECONDS: '1',
    }
    const start = () => launchStack({ dataDir, env, ...(databaseUrl ? { databaseUrl } : {}) })
    running = await start()
    const first = running
    const { liveKey } = first.credentials
    // The development workspace gets the plan with real hardware.
    const database = openDatabase(first.database, { max: 1 })
    try {
      await database.db.execute(sql`update tenants set plan_id = 'enterprise'`)
    } finally {
      await database.close()
    }
    // Its own IonQ key, whose jobs wait in the provider's queue until the test lets them run.
    const apiKey = `ionq-e2e-restart-${crypto.randomUUID()}`
    await ionq.addKey(apiKey, { qpu: true, queueMs: 3_600_000 })
    const call = (base: string, method: string, route: string, body?: unknown) =>
      fetch(`${base}${route}`, {
        method,
        headers: {
          authorization: `Bearer ${liveKey}`,
          'content-type': 'application/json',
          ...(method === 'POST' && route.endsWith('/jobs')
            ? { 'idempotency-key': `restart-${crypto.randomUUID()}` }
            : {}),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
    const made = await call(first.baseUrl, 'POST', '/svc/quantum-reasoning/provider-connections', {
      name: 'restart lab',
      kind: 'ionq',
      api_key: apiKey,
      base_url: ionqFixture.baseUrl,
    })
    expect(made.status, await made.clone().text()).toBe(201)
    const connection = (await made.json()) as { id: string }
    const created = await call(first.baseUrl, 'POST', '/svc/quantum-reasoning/jobs', {
      prompt: 'Which is larger, 2^10 or 10^3?',
      model: 'svc-hive',
      product: 'byopa_managed',
      provider_connection_id: connection.id,
    })
    expect(created.status, await created.clone().text()).toBe(202)
    const jobId = ((await created.json()) as { job: { id: string } }).job.id

    const jobAt = async (base: string) =>
      (
        (await (await call(base, 'GET', `/svc/quantum-reasoning/jobs/${jobId}`)).json()) as {
          job: Record<string, unknown>
        }
      ).job
    // Waiting on the provider: the provider job exists, ours is awaiting_qpu.
    const deadline = Date.now() + 60_000
    while (
      (await ionq.jobsFor(jobId)).length === 0 ||
      (await jobAt(first.baseUrl)).status !== 'awaiting_qpu'
    ) {
      if (Date.now() > deadline)
        throw new Error(`the job never waited on the provider: ${JSON.stringify(await jobAt(first.baseUrl))}`)
      await new Promise((r) => setTimeout(r, 200))
    }
    await first.kill()

    running = await start()
    const second = running
    expect(await jobAt(second.baseUrl)).toMatchObject({
      status: 'awaiting_qpu',
      real_request_status: 'reserved',
    })
    await ionq.addKey(apiKey, { qpu: true, queueMs: 0 })
    let job = await jobAt(second.baseUrl)
    const end = Date.now() + 60_000
    while (!['completed', 'classical_fallback', 'failed'].includes(String(job.status))) {
      if (Date.now() > end) throw new Error(`the job did not end after the restart: ${JSON.stringify(job)}`)
      await new Promise((r) => setTimeout(r, 200))
      job = await jobAt(second.baseUrl)
    }
    expect(job).toMatchObject({
      status: 'completed',
      real_request_status: 'executed',
      used_real_qubits: true,
      outcome_state: 'committed',
    })
    expect(await ionq.jobsFor(jobId)).toHaveLength(1)
  }, 300_000)
})
