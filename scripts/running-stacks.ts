/**
 * Which local stacks are running, so tools started later (the workspace CLI) find one without
 * being told its DATA_DIR. Each `npm start` leaves a small file in `<checkout>/.data/running/`
 * named by its process id, removed when it stops; a file whose process is gone (a crash, kill -9)
 * is ignored and swept by the next reader. The stack's own `DATA_DIR/runtime.json` stays the source
 * of truth for how to reach its database.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'

export interface RunningStack {
  pid: number
  dataDir: string
  baseUrl: string
}

export function runningStacksDir(root: string): string {
  return path.join(root, '.data', 'running')
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    // EPERM: alive, owned by someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Records this process's stack; the returned function removes the record. */
export function registerRunningStack(root: string, stack: Omit<RunningStack, 'pid'>): () => void {
  const dir = runningStacksDir(root)
  mkdirSync(dir, { recursive: true })
  const file = path.join(dir, `${process.pid}.json`)
  writeFileSync(file, `${JSON.stringify({ pid: process.pid, ...stack }, null, 2)}\n`)
  return () => rmSync(file, { force: true })
}

/** The stacks running now, oldest process first; records of dead processes are removed. */
export function listRunningStacks(
  root: string,
  alive: (pid: number) => boolean = processAlive,
): RunningStack[] {
  const dir = runningStacksDir(root)
  if (!existsSync(dir)) return []
  const stacks: RunningStack[] = []
  for (const name of readdirSync(dir)) {
    if (!/^\d+\.json$/.test(name)) continue
    const file = path.join(dir, name)
    let entry: RunningStack
    try {
      entry = JSON.parse(readFileSync(file, 'utf8')) as RunningStack
    } catch {
      continue
    }
    if (alive(entry.pid) && existsSync(path.join(entry.dataDir, 'runtime.json'))) stacks.push(entry)
    else rmSync(file, { force: true })
  }
  return stacks.sort((a, b) => a.pid - b.pid)
}

/**
 * The data folder of the stack a tool should use: DATA_DIR when set (it must hold a running stack),
 * else the default `.data` when its stack runs, else the one running stack. Several running and
 * none chosen, or none at all: an error that says what to pass.
 */
export function locateStackDataDir(
  root: string,
  dataDirSetting: string | undefined,
  alive: (pid: number) => boolean = processAlive,
): string {
  const running = listRunningStacks(root, alive)
  const described = running.map((s) => `  DATA_DIR=${s.dataDir}   (${s.baseUrl}, pid ${s.pid})`).join('\n')
  if (dataDirSetting !== undefined) {
    const dataDir = path.resolve(root, dataDirSetting)
    if (existsSync(path.join(dataDir, 'runtime.json'))) return dataDir
    throw new Error(
      `No running stack in DATA_DIR=${dataDir} (it has no runtime.json). Start one there with \`DATA_DIR=${dataDirSetting} npm start\`${
        running.length ? `, or pass the DATA_DIR of a running one:\n${described}` : '.'
      }`,
    )
  }
  const standard = path.resolve(root, '.data')
  if (existsSync(path.join(standard, 'runtime.json')) && running.some((s) => s.dataDir === standard)) {
    return standard
  }
  if (running.length === 1) return running[0]!.dataDir
  if (running.length > 1) {
    throw new Error(`Several stacks are running; choose one by passing its DATA_DIR:\n${described}`)
  }
  throw new Error(
    'No running stack found. Start one with `npm start` (in another terminal), or set DATABASE_URL to reach a database directly.',
  )
}
