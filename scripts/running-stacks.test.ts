/** How tools find the running local stack without being told its DATA_DIR. */
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { listRunningStacks, locateStackDataDir, runningStacksDir } from './running-stacks.ts'

/** A checkout with the given stacks recorded (each with a data folder holding runtime.json). */
function checkout(stacks: { pid: number; name: string; runtime?: boolean }[]) {
  const root = mkdtempSync(path.join(os.tmpdir(), 'svc-running-'))
  mkdirSync(runningStacksDir(root), { recursive: true })
  for (const s of stacks) {
    const dataDir = s.name === '.data' ? path.join(root, '.data') : path.join(root, s.name)
    mkdirSync(dataDir, { recursive: true })
    if (s.runtime !== false) writeFileSync(path.join(dataDir, 'runtime.json'), '{}')
    writeFileSync(
      path.join(runningStacksDir(root), `${s.pid}.json`),
      JSON.stringify({ pid: s.pid, dataDir, baseUrl: `http://127.0.0.1:${s.pid}` }),
    )
  }
  return root
}
const aliveExcept =
  (...dead: number[]) =>
  (pid: number) =>
    !dead.includes(pid)

describe('locating the running stack', () => {
  it('finds the one running stack in a custom data folder', () => {
    const root = checkout([{ pid: 101, name: 'custom-data' }])
    expect(locateStackDataDir(root, undefined, aliveExcept())).toBe(path.join(root, 'custom-data'))
  })

  it('prefers the default .data when its stack runs beside others', () => {
    const root = checkout([
      { pid: 101, name: 'other' },
      { pid: 102, name: '.data' },
    ])
    expect(locateStackDataDir(root, undefined, aliveExcept())).toBe(path.join(root, '.data'))
  })

  it('asks which one when several run, naming each DATA_DIR', () => {
    const root = checkout([
      { pid: 101, name: 'a' },
      { pid: 102, name: 'b' },
    ])
    expect(() => locateStackDataDir(root, undefined, aliveExcept())).toThrow(
      new RegExp(
        `Several stacks.*\\n.*DATA_DIR=${path.join(root, 'a')}.*\\n.*DATA_DIR=${path.join(root, 'b')}`,
      ),
    )
  })

  it('ignores and sweeps the records of stacks whose process is gone', () => {
    const root = checkout([
      { pid: 101, name: 'crashed' },
      { pid: 102, name: 'alive' },
    ])
    expect(locateStackDataDir(root, undefined, aliveExcept(101))).toBe(path.join(root, 'alive'))
    expect(readdirSync(runningStacksDir(root))).toEqual(['102.json'])
  })

  it('says how to start one when none runs', () => {
    const root = checkout([{ pid: 101, name: 'stopped', runtime: false }])
    expect(listRunningStacks(root, aliveExcept())).toEqual([])
    expect(() => locateStackDataDir(root, undefined, aliveExcept())).toThrow(
      /No running stack found.*npm start/,
    )
  })

  it('takes DATA_DIR when given, and names the running stacks when it holds none', () => {
    const root = checkout([{ pid: 101, name: 'running' }])
    expect(locateStackDataDir(root, 'running', aliveExcept())).toBe(path.join(root, 'running'))
    expect(() => locateStackDataDir(root, 'elsewhere', aliveExcept())).toThrow(
      new RegExp(`No running stack in DATA_DIR=.*elsewhere.*\\n.*DATA_DIR=${path.join(root, 'running')}`),
    )
  })
})
