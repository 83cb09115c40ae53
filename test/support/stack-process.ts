/**
 * Starts the product exactly as README says (`npm start`) in a child process with its own data
 * folder and a free port, waits for the banner, and reads the seeded credentials.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import type { DevCredentials } from '../../scripts/db/seed.ts'
import { ROOT } from '../../scripts/workers.ts'

export interface RunningStack {
  baseUrl: string
  credentials: DevCredentials
  database: { DATABASE_URL: string; DATABASE_WS_PROXY?: string }
  output: () => string
  stop(): Promise<void>
  /** SIGKILL to the whole process group (node, workerd, embedded Postgres): a crash, nothing flushed. */
  kill(): Promise<void>
}

export async function launchStack(options: {
  dataDir: string
  databaseUrl?: string
  env?: Record<string, string>
  timeoutMs?: number
  /** `npm start -- --runtime=<runtime>`; default Miniflare (plain `npm start`). */
  runtime?: 'miniflare' | 'workerd'
}): Promise<RunningStack> {
  const args = ['start', '--silent', ...(options.runtime === 'workerd' ? ['--', '--runtime=workerd'] : [])]
  const child: ChildProcess = spawn('npm', args, {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      PORT: '0',
      DATA_DIR: options.dataDir,
      DATABASE_URL: options.databaseUrl ?? '',
      ...options.env,
    },
  })
  let output = ''
  child.stdout?.on('data', (d: Buffer) => {
    output += d.toString()
  })
  child.stderr?.on('data', (d: Buffer) => {
    output += d.toString()
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))

  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`stack did not start in time:\n${output}`)),
      options.timeoutMs ?? 120_000,
    )
    const check = () => {
      const m = /Base URL\s+(http:\/\/\S+)/.exec(output)
      if (m) {
        clearTimeout(timer)
        resolve(m[1]!)
      }
    }
    child.stdout?.on('data', check)
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`stack exited with ${code}:\n${output}`))
    })
  })

  const credentials = JSON.parse(
    readFileSync(path.join(options.dataDir, 'dev-credentials.json'), 'utf8'),
  ) as DevCredentials
  const runtime = JSON.parse(readFileSync(path.join(options.dataDir, 'runtime.json'), 'utf8')) as {
    database: RunningStack['database']
  }
  return {
    baseUrl,
    credentials,
    database: runtime.database,
    output: () => output,
    async kill() {
      if (child.exitCode !== null) return
      try {
        process.kill(-child.pid!, 'SIGKILL')
      } catch {
        return
      }
      await exited
    },
    async stop() {
      if (child.exitCode !== null) return
      try {
        process.kill(-child.pid!, 'SIGTERM')
      } catch {
        return
      }
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL')
        } catch {}
      }, 10_000)
      await exited
      clearTimeout(timer)
    },
  }
}
