/**
 * `npm run agent -- "what to do"`: the reference client of the agent protocol (svc.code.v1,
 * docs/agent-protocol.md). It sends a turn, renders the NDJSON events, asks before the tool calls
 * the mode wants approved, runs approved client tools in the workspace folder, sends their
 * results in the next turn of the same run, and resumes from its last seq when the connection
 * drops (same run_id, turn_id and body, `cursor` = the last seq it saw).
 *
 *   npm run agent -- "Add install steps to README.md"
 *   npm run agent -- --mode auto --approve always --json "Fix the typo in src/index.ts"
 *   npm run agent -- --run-id <uuid> "And now the tests"          # continue a run
 *
 * Options (environment variables in brackets):
 *   --base-url URL        API base (SVC_BASE_URL; default the running `npm start`, else http://127.0.0.1:8787)
 *   --key KEY             API key (SVC_API_KEY; default the test key of `npm start`'s .data/dev-credentials.json)
 *   --model ALIAS         svc-cell | svc-brood | svc-comb (default) | svc-buzz | svc-hive | svc-swarm
 *   --mode MODE           manual | plan | edit (default) | auto
 *   --effort LEVEL        low | medium | high | xhigh | max | ultracode
 *   --thinking            enable_thinking
 *   --approve POLICY      ask (default on a terminal) | always | never (default otherwise)
 *   --workspace DIR       folder the client tools work in (default: the current folder)
 *   --commands            also offer run_command (tagged execute: always asks unless --approve always)
 *   --run-id UUID         continue this run (default: a new run)
 *   --session ID          session_id (default: a new one)
 *   --json                print every event as one NDJSON line on stdout; messages go to stderr
 *   --max-turns N         stop after N turns of tool round trips (default 16)
 *
 * Exit status: 0 the run stopped normally, 1 an HTTP or network error, 2 bad arguments,
 * 3 the turn failed, 4 the run was cancelled.
 */
import { execFile } from 'node:child_process'
import { createHash, randomUUID } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { createInterface } from 'node:readline/promises'
import { pathToFileURL } from 'node:url'
import {
  type AgentEvent,
  type AgentEventOf,
  isTerminal,
  NdjsonEventParser,
} from '../durable-objects/agent-run/agent-events.ts'
import type { FileChange } from '../durable-objects/agent-run/file-changes.ts'

// ---------------------------------------------------------------------------------------------
// Client tools the CLI runs on this machine

export interface ToolResultBody {
  call_id: string
  output: string | unknown[] | Record<string, unknown>
  is_error: boolean
  file_changes?: FileChange[]
}

export interface ClientTool {
  name: string
  description: string
  input_schema: Record<string, unknown>
  tags: string[]
  run(args: Record<string, unknown>, workspace: string): Promise<Omit<ToolResultBody, 'call_id'>>
}

const MAX_OUTPUT = 100_000

function sha256(bytes: Uint8Array | string): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`
}

/** Resolves `relative` inside `root`; refuses paths that leave it. */
export function insideWorkspace(root: string, relative: unknown): string {
  if (typeof relative !== 'string' || relative.trim() === '')
    throw new Error('path must be a non-empty string')
  const resolved = path.resolve(root, relative)
  const rel = path.relative(root, resolved)
  if (rel.startsWith('..') || path.isAbsolute(rel)) throw new Error(`${relative} is outside the workspace`)
  return resolved
}

/** Marks a last line without a newline, so it differs from the same line with one. */
const NO_EOL = '\u0000'

function lines(text: string): string[] {
  if (text === '') return []
  const parts = text.split('\n')
  if (parts.at(-1) === '') parts.pop()
  else parts[parts.length - 1] += NO_EOL
  return parts
}

/**
 * A unified diff of two texts (line-based, 3 lines of context), as `diff -u` prints it. Large
 * files (over 4,000 lines on either side) are diffed as a whole replacement.
 */
export function unifiedDiff(before: string | null, after: string | null, file: string): string {
  const a = before === null ? [] : lines(before)
  const b = after === null ? [] : lines(after)
  const header = `--- ${before === null ? '/dev/null' : `a/${file}`}\n+++ ${after === null ? '/dev/null' : `b/${file}`}\n`
  type Op = { kind: ' ' | '-' | '+'; line: string }
  let ops: Op[]
  if (a.length > 4000 || b.length > 4000) {
    ops = [
      ...a.map((line) => ({ kind: '-' as const, line })),
      ...b.map((line) => ({ kind: '+' as const, line })),
    ]
  } else {
    const lcs = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1))
    for (let i = a.length - 1; i >= 0; i--)
      for (let j = b.length - 1; j >= 0; j--)
        lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!)
    ops = []
    let i = 0
    let j = 0
    while (i < a.length || j < b.length) {
      if (i < a.length && j < b.length && a[i] === b[j]) {
        ops.push({ kind: ' ', line: a[i]! })
        i++
        j++
      } else if (i < a.length && (j === b.length || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) {
        ops.push({ kind: '-', line: a[i]! })
        i++
      } else {
        ops.push({ kind: '+', line: b[j]! })
        j++
      }
    }
  }
  const changed = ops.map((op, index) => (op.kind === ' ' ? -1 : index)).filter((index) => index >= 0)
  if (changed.length === 0) return ''
  let out = header
  let start = 0
  while (start < changed.length) {
    let end = start
    while (end + 1 < changed.length && changed[end + 1]! - changed[end]! <= 7) end++
    const from = Math.max(0, changed[start]! - 3)
    const to = Math.min(ops.length, changed[end]! + 4)
    let aStart = 0
    let bStart = 0
    for (const op of ops.slice(0, from)) {
      if (op.kind !== '+') aStart++
      if (op.kind !== '-') bStart++
    }
    const hunk = ops.slice(from, to)
    const aLen = hunk.filter((op) => op.kind !== '+').length
    const bLen = hunk.filter((op) => op.kind !== '-').length
    const range = (startLine: number, length: number) =>
      length === 1 ? `${startLine + 1}` : `${length === 0 ? startLine : startLine + 1},${length}`
    out += `@@ -${range(aStart, aLen)} +${range(bStart, bLen)} @@\n`
    for (const op of hunk) {
      out += op.line.endsWith(NO_EOL)
        ? `${op.kind}${op.line.slice(0, -1)}\n\\ No newline at end of file\n`
        : `${op.kind}${op.line}\n`
    }
    start = end + 1
  }
  return out
}

export const READ_FILE: ClientTool = {
  name: 'read_file',
  description: 'Reads a text file of the workspace. Paths are relative to the workspace root.',
  input_schema: {
    type: 'object',
    properties: { path: { type: 'string', description: 'File path relative to the workspace root' } },
    required: ['path'],
    additionalProperties: false,
  },
  tags: ['read-only'],
  async run(args, workspace) {
    const text = await readFile(insideWorkspace(workspace, args.path), 'utf8')
    return {
      output: text.length > MAX_OUTPUT ? `${text.slice(0, MAX_OUTPUT)}\n… (cut)` : text,
      is_error: false,
    }
  },
}

export const LIST_DIR: ClientTool = {
  name: 'list_dir',
  description: 'Lists a folder of the workspace (names, with a trailing / for folders).',
  input_schema: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'Folder relative to the workspace root ("." for the root)' },
    },
    required: ['path'],
    additionalProperties: false,
  },
  tags: ['read-only'],
  async run(args, workspace) {
    const dir = insideWorkspace(workspace, args.path === '.' ? '.' : args.path)
    const entries = await readdir(dir, { withFileTypes: true })
    return {
      output: entries
        .map((e) => (e.isDirectory() ? `${e.name}/` : e.name))
        .sort()
        .join('\n'),
      is_error: false,
    }
  },
}

export const WRITE_FILE: ClientTool = {
  name: 'write_file',
  description: 'Creates or replaces a text file of the workspace with the given content.',
  input_schema: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'File path relative to the workspace root' },
      content: { type: 'string', description: 'The whole new content of the file' },
    },
    required: ['path', 'content'],
    additionalProperties: false,
  },
  tags: ['edit'],
  async run(args, workspace) {
    const file = insideWorkspace(workspace, args.path)
    if (typeof args.content !== 'string') throw new Error('content must be a string')
    const before = existsSync(file) ? await readFile(file) : null
    await mkdir(path.dirname(file), { recursive: true })
    await writeFile(file, args.content)
    const relative = path.relative(workspace, file).split(path.sep).join('/')
    const change: FileChange = {
      path: relative,
      op: before === null ? 'create' : 'modify',
      diff: unifiedDiff(before?.toString('utf8') ?? null, args.content, relative),
      base_hash: before === null ? null : sha256(before),
      new_hash: sha256(args.content),
    }
    return {
      output: `${before === null ? 'created' : 'wrote'} ${relative} (${Buffer.byteLength(args.content)} bytes)`,
      is_error: false,
      file_changes: [change],
    }
  },
}

export const RUN_COMMAND: ClientTool = {
  name: 'run_command',
  description: 'Runs a shell command in the workspace root and returns its exit code and output.',
  input_schema: {
    type: 'object',
    properties: { command: { type: 'string', description: 'The shell command line' } },
    required: ['command'],
    additionalProperties: false,
  },
  tags: ['execute'],
  run(args, workspace) {
    return new Promise((resolve) => {
      execFile(
        process.env.SHELL ?? '/bin/sh',
        ['-c', String(args.command)],
        { cwd: workspace, timeout: 60_000, maxBuffer: 4 * 1024 * 1024 },
        (error, stdout, stderr) => {
          const code = error && typeof error.code === 'number' ? error.code : error ? 1 : 0
          resolve({
            output: { exit_code: code, stdout: stdout.slice(-MAX_OUTPUT), stderr: stderr.slice(-MAX_OUTPUT) },
            is_error: code !== 0,
          })
        },
      )
    })
  },
}

export const DEFAULT_TOOLS: readonly ClientTool[] = [READ_FILE, LIST_DIR, WRITE_FILE]

// ---------------------------------------------------------------------------------------------
// The protocol client

export type ApprovalPolicy =
  | 'always'
  | 'never'
  | ((request: { name: string; arguments: Record<string, unknown>; reason: string }) => Promise<boolean>)

export interface AgentClientOptions {
  baseUrl: string
  apiKey: string
  model?: string
  mode?: 'manual' | 'plan' | 'edit' | 'auto'
  effort?: string
  thinking?: boolean
  sessionId?: string
  runId?: string
  /** Continue after this seq (a run started elsewhere). */
  cursor?: number
  workspace: string
  tools?: readonly ClientTool[]
  approve: ApprovalPolicy
  /** Replaceable for tests (e.g. a fetch that cuts connections). */
  fetch?: typeof fetch
  onEvent?: (event: AgentEvent) => void
  /** Called when a dropped connection is resumed (attempt number, cursor). */
  onReconnect?: (attempt: number, cursor: number) => void
  /** Connection attempts per turn before giving up (default 20). */
  maxAttempts?: number
  /** First reconnect delay in ms, doubled per attempt up to 5 s (default 200). */
  reconnectDelayMs?: number
  /** Turns (tool round trips) per `send` (default 16). */
  maxTurns?: number
}

export class AgentHttpError extends Error {
  readonly status: number
  readonly body: { error?: { message?: string; code?: string } } | null

  constructor(status: number, body: { error?: { message?: string; code?: string } } | null) {
    super(
      `HTTP ${status}${body?.error?.code ? ` ${body.error.code}` : ''}: ${body?.error?.message ?? 'no error body'}`,
    )
    this.name = 'AgentHttpError'
    this.status = status
    this.body = body
  }
}

export class ProtocolError extends Error {
  override name = 'ProtocolError'
}

type Terminal = AgentEventOf<'turn.completed'> | AgentEventOf<'turn.failed'> | AgentEventOf<'turn.cancelled'>

export interface RunOutcome {
  runId: string
  /** The last turn's terminal event. */
  terminal: Terminal
  turns: number
}

const RETRY_STATUSES = new Set([429, 502, 503, 504])

export class AgentClient {
  readonly runId: string
  readonly sessionId: string
  lastSeq: number
  /** Every durable event received, in seq order, without duplicates (heartbeats excluded). */
  readonly events: AgentEvent[] = []
  private readonly calls = new Map<string, AgentEventOf<'tool_call.requested'>['data']>()
  private readonly approvals = new Map<string, AgentEventOf<'approval.requested'>['data']>()
  private readonly options: AgentClientOptions
  private readonly tools: readonly ClientTool[]
  /** The body of the latest turn, for a reattach from any cursor (`replay`). */
  private lastTurnBody: Record<string, unknown> | null = null

  constructor(options: AgentClientOptions) {
    this.options = options
    this.runId = options.runId ?? randomUUID()
    this.sessionId = options.sessionId ?? `cli-${randomUUID()}`
    this.lastSeq = options.cursor ?? 0
    this.tools = options.tools ?? DEFAULT_TOOLS
  }

  private get fetch(): typeof fetch {
    return this.options.fetch ?? fetch
  }

  private headers(): Record<string, string> {
    return { authorization: `Bearer ${this.options.apiKey}`, 'content-type': 'application/json' }
  }

  private turnBody(turnId: string, extra: Record<string, unknown>): Record<string, unknown> {
    return {
      protocol: 'svc.code.v1',
      session_id: this.sessionId,
      run_id: this.runId,
      turn_id: turnId,
      model: this.options.model ?? 'svc-comb',
      mode: this.options.mode ?? 'edit',
      ...(this.options.effort ? { effort: this.options.effort } : {}),
      ...(this.options.thinking ? { enable_thinking: true } : {}),
      workspace: { root: path.basename(this.options.workspace), client: 'svc-agent-cli' },
      transcript: [],
      capabilities: { file_changes: true, approvals: true },
      client_tools: this.tools.map(({ name, description, input_schema, tags }) => ({
        name,
        description,
        input_schema,
        tags,
      })),
      ...extra,
    }
  }

  private record(event: AgentEvent): void {
    if (event.type === 'tool_call.requested') this.calls.set(event.data.call_id, event.data)
    if (event.type === 'approval.requested') this.approvals.set(event.data.approval_id, event.data)
  }

  /**
   * One turn, to its terminal event, surviving dropped connections: the same body is posted again
   * with `cursor` = the last seq received, which replays what was missed and follows the turn.
   */
  async turn(turnId: string, extra: Record<string, unknown>): Promise<Terminal> {
    const body = this.turnBody(turnId, extra)
    this.lastTurnBody = body
    const maxAttempts = this.options.maxAttempts ?? 20
    let delay = this.options.reconnectDelayMs ?? 200
    let lastError: unknown = null
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      if (attempt > 1) {
        this.options.onReconnect?.(attempt, this.lastSeq)
        await new Promise((resolve) => setTimeout(resolve, delay))
        delay = Math.min(delay * 2, 5_000)
      }
      let response: Response
      try {
        response = await this.fetch(`${this.options.baseUrl}/svc/code/v1/turns`, {
          method: 'POST',
          headers: this.headers(),
          body: JSON.stringify({ ...body, cursor: this.lastSeq }),
        })
      } catch (err) {
        lastError = err
        continue
      }
      if (!response.ok) {
        const error = new AgentHttpError(response.status, await response.json().catch(() => null))
        if (!RETRY_STATUSES.has(response.status)) throw error
        lastError = error
        continue
      }
      try {
        const terminal = await this.follow(response, turnId)
        if (terminal) return terminal
        lastError = new ProtocolError('the stream ended before the turn did')
      } catch (err) {
        if (err instanceof ProtocolError) throw err
        lastError = err
      }
    }
    throw lastError instanceof Error ? lastError : new Error(String(lastError))
  }

  /** Reads one response; returns the turn's terminal event, or null if the stream broke first. */
  private async follow(response: Response, turnId: string): Promise<Terminal | null> {
    if (!response.body) return null
    const parser = new NdjsonEventParser()
    const reader = response.body.getReader()
    try {
      for (;;) {
        const { done, value } = await reader.read()
        const events = done ? parser.end() : parser.push(value)
        for (const event of events) {
          if (event.type === 'heartbeat') continue
          if (event.seq <= this.lastSeq) continue
          if (event.seq !== this.lastSeq + 1) {
            throw new ProtocolError(
              `event seq ${event.seq} follows ${this.lastSeq}: the server skipped events`,
            )
          }
          this.lastSeq = event.seq
          this.events.push(event)
          this.record(event)
          this.options.onEvent?.(event)
          if (isTerminal(event.type) && event.turn_id === turnId) {
            await reader.cancel().catch(() => {})
            return event as Terminal
          }
        }
        if (done) return null
      }
    } finally {
      reader.releaseLock()
    }
  }

  private async decide(approvalId: string): Promise<boolean> {
    const ask = this.approvals.get(approvalId)
    const call = ask ? this.calls.get(ask.call_id) : undefined
    const policy = this.options.approve
    if (policy === 'always') return true
    if (policy === 'never') return false
    return policy({
      name: call?.name ?? 'a tool',
      arguments: call?.arguments ?? {},
      reason: ask?.reason ?? '',
    })
  }

  private async runTool(callId: string): Promise<ToolResultBody> {
    const call = this.calls.get(callId)
    const tool = call ? this.tools.find((t) => t.name === call.name) : undefined
    if (!call || !tool) {
      return { call_id: callId, output: `this client has no tool for call ${callId}`, is_error: true }
    }
    try {
      return { call_id: callId, ...(await tool.run(call.arguments, this.options.workspace)) }
    } catch (err) {
      return { call_id: callId, output: err instanceof Error ? err.message : String(err), is_error: true }
    }
  }

  /**
   * Sends `request` as a new turn, then keeps the run going while it waits for approvals or
   * client tool results: asks (or applies the policy), runs the approved client tools, and sends
   * the answers as the next turn. Returns when a turn ends for another reason.
   */
  async send(request: string): Promise<RunOutcome> {
    const maxTurns = this.options.maxTurns ?? 16
    let extra: Record<string, unknown> = { request }
    for (let turns = 1; ; turns++) {
      const terminal = await this.turn(`turn-${randomUUID()}`, extra)
      if (terminal.type !== 'turn.completed') return { runId: this.runId, terminal, turns }
      const stop = terminal.data.stop_reason
      if ((stop !== 'awaiting_approval' && stop !== 'awaiting_client_tool') || turns >= maxTurns) {
        return { runId: this.runId, terminal, turns }
      }
      const approvals: { approval_id: string; decision: 'approve' | 'deny' }[] = []
      const toRun = [...(terminal.data.pending_tool_calls ?? [])]
      for (const approvalId of terminal.data.pending_approvals ?? []) {
        const approved = await this.decide(approvalId)
        approvals.push({ approval_id: approvalId, decision: approved ? 'approve' : 'deny' })
        const callId = this.approvals.get(approvalId)?.call_id
        const call = callId ? this.calls.get(callId) : undefined
        if (approved && call && call.executor !== 'server') toRun.push(call.call_id)
      }
      const results: ToolResultBody[] = []
      for (const callId of toRun) results.push(await this.runTool(callId))
      extra = {
        request: '',
        ...(approvals.length > 0 ? { approvals } : {}),
        ...(results.length > 0 ? { tool_results: results } : {}),
      }
    }
  }

  /**
   * Everything the server stored for this run up to the end of the latest turn: that turn posted
   * again (same body, so it reattaches) from cursor 0. Changes nothing on the client.
   */
  async replay(fetchImpl: typeof fetch = this.fetch): Promise<AgentEvent[]> {
    if (!this.lastTurnBody) return []
    const response = await fetchImpl(`${this.options.baseUrl}/svc/code/v1/turns`, {
      method: 'POST',
      headers: this.headers(),
      body: JSON.stringify({ ...this.lastTurnBody, cursor: 0 }),
    })
    if (!response.ok || !response.body)
      throw new AgentHttpError(response.status, await response.json().catch(() => null))
    const parser = new NdjsonEventParser()
    const events: AgentEvent[] = []
    const reader = response.body.getReader()
    for (;;) {
      const { done, value } = await reader.read()
      events.push(...(done ? parser.end() : parser.push(value)))
      if (done) return events.filter((e) => e.type !== 'heartbeat')
    }
  }

  /** DELETE /svc/agents/runs/{runId}. */
  async cancel(): Promise<Response> {
    return this.fetch(`${this.options.baseUrl}/svc/agents/runs/${this.runId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${this.options.apiKey}` },
    })
  }
}

// ---------------------------------------------------------------------------------------------
// Rendering for people

const dim = (text: string) => (process.stderr.isTTY ? `\x1b[2m${text}\x1b[0m` : text)

export function renderEvent(event: AgentEvent, write: (text: string) => void): void {
  const d = event.data as Record<string, unknown>
  switch (event.type) {
    case 'turn.started':
      write(dim(`── turn ${event.turn_id} (${d.model}, ${d.mode} mode, run ${event.run_id})\n`))
      break
    case 'message.delta':
      write(String(d.delta))
      break
    case 'reasoning.delta':
      write(dim(String(d.delta)))
      break
    case 'tool_call.requested':
      write(
        `\n→ ${d.name} ${JSON.stringify(d.arguments)} [${d.executor}${d.approval === 'required' ? ', needs approval' : ''}]\n`,
      )
      break
    case 'tool_call.updated':
      if (d.status === 'running') break
      write(
        d.status === 'completed'
          ? dim(`  ✓ ${String(d.call_id)} completed\n`)
          : `  ✗ ${String(d.call_id)} ${d.status}: ${(d.error as { message?: string } | undefined)?.message ?? ''}\n`,
      )
      break
    case 'approval.requested':
      write(`  ? approval ${d.approval_id}: ${d.reason} (until ${d.expires_at})\n`)
      break
    case 'approval.resolved':
      write(dim(`  ${d.decision === 'approve' ? 'approved' : 'denied'} by ${d.decided_by}\n`))
      break
    case 'file.delta':
      write(`\n${String(d.diff)}`)
      break
    case 'plan.updated':
      write(
        `\nplan:\n${(d.steps as { step: string; status: string }[])
          .map(
            (s) => `  [${s.status === 'completed' ? 'x' : s.status === 'in_progress' ? '>' : ' '}] ${s.step}`,
          )
          .join('\n')}\n`,
      )
      break
    case 'progress':
      write(dim(`\n… ${d.message}\n`))
      break
    case 'usage': {
      const run = d.run as { total_tokens: number }
      write(dim(`\n[tokens: ${run.total_tokens} in this run]\n`))
      break
    }
    case 'turn.completed':
      write(dim(`── ${d.stop_reason}\n`))
      break
    case 'turn.failed':
      write(`\n── failed: ${(d.error as { message: string }).message}${d.retryable ? ' (retryable)' : ''}\n`)
      break
    case 'turn.cancelled':
      write(`\n── cancelled: ${d.reason}\n`)
      break
    default:
      break
  }
}

// ---------------------------------------------------------------------------------------------
// Command line

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

class UsageError extends Error {}

function devDefaults(): { baseUrl?: string; testKey?: string } {
  const dataDir = path.resolve(import.meta.dirname, '..', process.env.DATA_DIR ?? '.data')
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

async function main(): Promise<number> {
  let args: CliArguments
  try {
    args = parseArguments(process.argv.slice(2))
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`agent: ${err.message}\n`)
      return 2
    }
    throw err
  }
  if (!(await stat(args.workspace).catch(() => null))?.isDirectory()) {
    process.stderr.write(`agent: --workspace ${args.workspace} is not a folder\n`)
    return 2
  }
  const out = (text: string) => process.stdout.write(text)
  const err = (text: string) => process.stderr.write(text)
  const prompt =
    args.approve === 'ask'
      ? async (request: { name: string; arguments: Record<string, unknown>; reason: string }) => {
          const rl = createInterface({ input: process.stdin, output: process.stderr })
          try {
            const answer = await rl.question(
              `\nAllow ${request.name} ${JSON.stringify(request.arguments)}?\n  (${request.reason}) [y/N] `,
            )
            return /^y(es)?$/i.test(answer.trim())
          } finally {
            rl.close()
          }
        }
      : args.approve
  const client = new AgentClient({
    baseUrl: args.baseUrl,
    apiKey: args.apiKey,
    model: args.model,
    mode: args.mode,
    ...(args.effort ? { effort: args.effort } : {}),
    thinking: args.thinking,
    ...(args.runId ? { runId: args.runId } : {}),
    ...(args.sessionId ? { sessionId: args.sessionId } : {}),
    workspace: args.workspace,
    tools: args.commands ? [...DEFAULT_TOOLS, RUN_COMMAND] : DEFAULT_TOOLS,
    approve: prompt,
    maxTurns: args.maxTurns,
    onEvent: (event) => (args.json ? out(`${JSON.stringify(event)}\n`) : renderEvent(event, out)),
    onReconnect: (attempt, cursor) =>
      err(dim(`\n[connection lost; resuming from seq ${cursor} (attempt ${attempt})]\n`)),
  })
  let interrupted = false
  process.once('SIGINT', () => {
    interrupted = true
    err('\n[cancelling the run…]\n')
    void client.cancel().finally(() => process.exit(4))
  })
  try {
    const outcome = await client.send(args.request)
    if (!args.json) out('\n')
    err(dim(`run ${outcome.runId}, last seq ${client.lastSeq}\n`))
    if (outcome.terminal.type === 'turn.failed') return 3
    if (outcome.terminal.type === 'turn.cancelled') return 4
    return 0
  } catch (error) {
    if (interrupted) return 4
    err(`agent: ${error instanceof Error ? error.message : String(error)}\n`)
    return 1
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(
        `agent: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      )
      process.exit(1)
    },
  )
}
