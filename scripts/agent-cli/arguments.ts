/**
 * The CLI's command line (the options are listed in scripts/agent-cli.ts), with defaults from the
 * environment and from the running `npm start` (its base URL and test key under DATA_DIR).
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'

export interface CliArguments {
  request: string
  baseUrl: string
  apiKey: string
  model: string
  mode: 'manual' | 'plan' | 'edit' | 'auto'
  effort?: string
  thinking: boolean
  approve: 'ask' | 'always' | 'never'
  workspace: string
  commands: boolean
  runId?: string
  sessionId?: string
  json: boolean
  maxTurns: number
}

/** A command line the CLI cannot run (exit status 2). */
export class UsageError extends Error {}

function devDefaults(): { baseUrl?: string; testKey?: string } {
  const dataDir = path.resolve(import.meta.dirname, '..', '..', process.env.DATA_DIR ?? '.data')
  const out: { baseUrl?: string; testKey?: string } = {}
  try {
    out.testKey = (
      JSON.parse(readFileSync(path.join(dataDir, 'dev-credentials.json'), 'utf8')) as { testKey?: string }
    ).testKey
  } catch {}
  try {
    out.baseUrl = (
      JSON.parse(readFileSync(path.join(dataDir, 'runtime.json'), 'utf8')) as { baseUrl?: string }
    ).baseUrl
  } catch {}
  return out
}

export function parseArguments(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): CliArguments {
  const values = new Map<string, string>()
  const flags = new Set<string>()
  const words: string[] = []
  const valued = new Set([
    'base-url',
    'key',
    'model',
    'mode',
    'effort',
    'approve',
    'workspace',
    'run-id',
    'session',
    'max-turns',
  ])
  const booleans = new Set(['thinking', 'json', 'commands'])
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '--') {
      words.push(...argv.slice(i + 1))
      break
    }
    if (!arg.startsWith('--')) {
      words.push(arg)
      continue
    }
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined]
    if (booleans.has(name)) flags.add(name)
    else if (valued.has(name)) {
      const value = inline ?? argv[++i]
      if (value === undefined) throw new UsageError(`--${name} needs a value`)
      values.set(name, value)
    } else throw new UsageError(`unknown option --${name}`)
  }
  const request = words.join(' ').trim()
  if (request === '')
    throw new UsageError('say what the agent should do, e.g. npm run agent -- "Add a README"')
  const dev = devDefaults()
  const apiKey = values.get('key') ?? env.SVC_API_KEY ?? dev.testKey
  if (!apiKey) throw new UsageError('no API key: pass --key, set SVC_API_KEY, or run `npm start` first')
  const mode = values.get('mode') ?? 'edit'
  if (!['manual', 'plan', 'edit', 'auto'].includes(mode))
    throw new UsageError(`--mode must be manual, plan, edit or auto (got ${mode})`)
  const approve = values.get('approve') ?? (process.stdin.isTTY ? 'ask' : 'never')
  if (!['ask', 'always', 'never'].includes(approve))
    throw new UsageError(`--approve must be ask, always or never (got ${approve})`)
  const maxTurns = Number(values.get('max-turns') ?? 16)
  if (!Number.isInteger(maxTurns) || maxTurns < 1)
    throw new UsageError('--max-turns must be a positive integer')
  return {
    request,
    baseUrl: (values.get('base-url') ?? env.SVC_BASE_URL ?? dev.baseUrl ?? 'http://127.0.0.1:8787').replace(
      /\/+$/,
      '',
    ),
    apiKey,
    model: values.get('model') ?? 'svc-comb',
    mode: mode as CliArguments['mode'],
    ...(values.has('effort') ? { effort: values.get('effort')! } : {}),
    thinking: flags.has('thinking'),
    approve: approve as CliArguments['approve'],
    workspace: path.resolve(values.get('workspace') ?? process.cwd()),
    commands: flags.has('commands'),
    ...(values.has('run-id') ? { runId: values.get('run-id')! } : {}),
    ...(values.has('session') ? { sessionId: values.get('session')! } : {}),
    json: flags.has('json'),
    maxTurns,
  }
}
