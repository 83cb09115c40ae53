/**
 * Global setup of the `do-reasoning` project: the fake IonQ provider (ionq-provider.process.ts)
 * in its own Node process, handed to the tests as `inject('ionqProvider')`: the base URL the
 * workers call, the control URL the tests script faults with, and the fake's keys.
 */
import { spawn } from 'node:child_process'
import path from 'node:path'
import type { TestProject } from 'vitest/node'
import type { IonqProviderFixture } from './ionq-provider.fixture.ts'

const ROOT = path.resolve(import.meta.dirname, '../..')

export default async function setup(project: TestProject) {
  const child = spawn(path.join(ROOT, 'node_modules/.bin/tsx'), ['test/support/ionq-provider.process.ts'], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const fixture = await new Promise<IonqProviderFixture>((resolve, reject) => {
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const line = output.split('\n', 2)
      if (line.length === 2) resolve(JSON.parse(line[0]!) as IonqProviderFixture)
    })
    child.once('exit', (code) => reject(new Error(`the fake IonQ provider exited with ${code}`)))
  })
  project.provide('ionqProvider', fixture)
  return async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.stdin.end()
    await exited
  }
}
