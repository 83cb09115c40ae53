/**
 * A crash of `npm start` loses no OTLP export it acknowledged: the whole process group is killed
 * with SIGKILL in the middle of a burst of exports (an observability token, the collector fake in
 * this process), then started again on the same data folder and database. Every export that got
 * its 200 reached the collector with the exact bytes sent and its ingestion result is there after
 * the restart; an export cut by the crash may or may not have reached the collector (at least
 * once: the exporter retries it), but none is counted as forwarded without reaching it.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, inject, it } from 'vitest'
import { type OtlpCollectorFake, startOtlpCollectorFake } from '../fakes/otlp-collector.ts'
import { createScratchDatabase } from '../support/scratch-postgres.ts'
import { launchStack, type RunningStack } from '../support/stack-process.ts'

const fixture = inject('stack')
const BURST = 120
const CONCURRENCY = 16

/** A small OTLP JSON export whose body names its request (so each one is distinct). */
const exportBody = (requestId: string) =>
  JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'crash-emitter' } }] },
        scopeLogs: [
          { logRecords: [{ body: { stringValue: requestId } }, { body: { stringValue: 'second' } }] },
        ],
      },
    ],
  })

describe(`SIGKILL of npm start during OTLP exports (${fixture.kind})`, () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-e2e-otlp-crash-'))
  let stack: RunningStack | null = null
  let collector: OtlpCollectorFake | null = null
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>> | null = null

  afterAll(async () => {
    await stack?.stop()
    await collector?.close()
    await scratch?.drop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('loses no acknowledged export', async () => {
    collector = await startOtlpCollectorFake()
    scratch = fixture.kind === 'postgres' ? await createScratchDatabase() : null
    const launch = () =>
      launchStack({
        dataDir,
        ...(scratch ? { databaseUrl: scratch.url } : {}),
        env: { OTLP_COLLECTOR_URL: collector!.url },
      })
    stack = await launch()
    const first = stack
    const created = await fetch(`${first.baseUrl}/platform/v1/observability-tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${first.credentials.liveKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'crash' }),
    })
    expect(created.status).toBe(201)
    const { token } = (await created.json()) as { token: string }

    const acknowledged: string[] = []
    let next = 0
    let armKill: () => void = () => {}
    const killed = new Promise<void>((resolve) => {
      armKill = () => {
        armKill = () => {}
        setTimeout(() => void first.kill().then(resolve), Math.floor(Math.random() * 500))
      }
    })
    const worker = async () => {
      while (next < BURST) {
        const requestId = `otlp-crash-${next++}`
        try {
          const res = await fetch(`${first.baseUrl}/otlp/v1/logs`, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${token}`,
              'content-type': 'application/json',
              'x-request-id': requestId,
            },
            body: exportBody(requestId),
          })
          if (res.status === 200) acknowledged.push(requestId)
        } catch {
          // cut by the crash: not acknowledged
        }
        if (acknowledged.length >= 8) armKill()
      }
      armKill()
    }
    await Promise.all([...Array.from({ length: CONCURRENCY }, worker), killed])
    expect(acknowledged.length).toBeGreaterThanOrEqual(8)

    // Every acknowledged export is at the collector, byte for byte.
    const received = new Map<string, string[]>()
    for (const r of collector.requests) {
      const id = r.headers['x-svc-request-id'] ?? ''
      received.set(id, [...(received.get(id) ?? []), Buffer.from(r.body, 'base64').toString('utf8')])
    }
    for (const id of acknowledged) expect(received.get(id), id).toContain(exportBody(id))

    // After the restart, every acknowledged export's result is retained as forwarded, and nothing
    // is counted as forwarded that the collector never got.
    stack = await launch()
    const res = await fetch(`${stack.baseUrl}/platform/v1/telemetry/ingestions?limit=200&signal=logs`, {
      headers: { authorization: `Bearer ${stack.credentials.liveKey}` },
    })
    expect(res.status).toBe(200)
    const { data, totals } = (await res.json()) as {
      data: { request_id: string; outcome: string; items: number }[]
      totals: { signal: string; forwarded_requests: number; items: number }[]
    }
    const forwarded = new Set(data.filter((r) => r.outcome === 'forwarded').map((r) => r.request_id))
    for (const id of acknowledged) expect(forwarded.has(id), id).toBe(true)
    for (const id of forwarded) expect(received.has(id), id).toBe(true)
    const logs = totals.find((t) => t.signal === 'logs')!
    expect(logs.forwarded_requests).toBe(forwarded.size)
    expect(logs.items).toBe(2 * forwarded.size)
  }, 240_000)
})
