import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, inject, it } from 'vitest'
import { createScratchDatabase } from '../support/scratch-postgres.ts'
import { launchStack, type RunningStack } from '../support/stack-process.ts'

const fixture = inject('stack')

describe(`restarting npm start (${fixture.kind})`, () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-e2e-restart-'))
  let running: RunningStack | null = null
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>> | null = null

  afterAll(async () => {
    await running?.stop()
    await scratch?.drop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('keeps the workspace, its keys and its data', async () => {
    // Its own database: the development seed would otherwise share (and re-key) the suite's owner.
    scratch = fixture.kind === 'postgres' ? await createScratchDatabase() : null
    const databaseUrl = scratch?.url
    running = await launchStack({ dataDir, ...(databaseUrl ? { databaseUrl } : {}) })
    const first = running
    const note = `survives restarts ${crypto.randomUUID()}`
    const created = await fetch(`${first.baseUrl}/svc/memories`, {
      method: 'POST',
      headers: { authorization: `Bearer ${first.credentials.testKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ content: note }),
    })
    expect(created.status).toBe(200)
    expect(first.output()).toContain(first.credentials.testKey)
    expect(first.output()).toContain(first.credentials.liveKey)
    await first.stop()

    running = await launchStack({ dataDir, ...(databaseUrl ? { databaseUrl } : {}) })
    const second = running
    expect(second.credentials).toEqual(first.credentials)
    expect(second.output()).toContain(first.credentials.liveKey)
    const list = await fetch(`${second.baseUrl}/svc/memories`, {
      headers: { authorization: `Bearer ${first.credentials.testKey}` },
    })
    expect(list.status).toBe(200)
    const body = (await list.json()) as { data: { content: string }[] }
    expect(body.data.map((m) => m.content)).toContain(note)
  }, 180_000)
})
