/**
 * New embedded databases start from one kept empty cluster: made once, copied into every new data
 * folder, never into a folder that already holds something.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { startFromTemplate } from './pglite-template.ts'

const scratch = mkdtempSync(path.join(os.tmpdir(), 'svc-pglite-template-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
const cache = path.join(scratch, 'cache')

let made = 0
/** Stands in for initdb: a cluster folder as PGlite leaves it (PG_VERSION and a data file). */
async function createCluster(dir: string): Promise<void> {
  made++
  writeFileSync(path.join(dir, 'PG_VERSION'), '17\n')
  mkdirSync(path.join(dir, 'base'))
  writeFileSync(path.join(dir, 'base', 'cluster'), `cluster ${made}`)
}

describe('the empty-cluster template', () => {
  it('is made once and copied into each new or empty data folder', async () => {
    const first = path.join(scratch, 'first')
    const second = path.join(scratch, 'second')
    mkdirSync(second)
    await startFromTemplate(first, createCluster, cache)
    await startFromTemplate(second, createCluster, cache)
    expect(made).toBe(1)
    for (const dir of [first, second]) {
      expect(readFileSync(path.join(dir, 'PG_VERSION'), 'utf8')).toBe('17\n')
      expect(readFileSync(path.join(dir, 'base', 'cluster'), 'utf8')).toBe('cluster 1')
    }
    // The copies are the data folders' own: writing one changes neither the template nor another.
    writeFileSync(path.join(first, 'base', 'cluster'), 'changed')
    const third = path.join(scratch, 'third')
    await startFromTemplate(third, createCluster, cache)
    expect(readFileSync(path.join(third, 'base', 'cluster'), 'utf8')).toBe('cluster 1')
  })

  it('leaves a folder that already holds a cluster (or anything) alone', async () => {
    const existing = path.join(scratch, 'existing')
    mkdirSync(existing)
    writeFileSync(path.join(existing, 'PG_VERSION'), '16\n')
    await startFromTemplate(existing, createCluster, cache)
    expect(readFileSync(path.join(existing, 'PG_VERSION'), 'utf8')).toBe('16\n')
    expect(existsSync(path.join(existing, 'base'))).toBe(false)
  })
})
