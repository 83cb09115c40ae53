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
 *
 * This file only composes the parts in scripts/agent-cli/: arguments.ts (the command line),
 * agent-client.ts (the protocol client, `AgentClient`), workspace-tools.ts (the client tools it
 * runs, with unified-diff.ts) and terminal.ts (rendering and the approval question).
 */
import { stat } from 'node:fs/promises'
import { pathToFileURL } from 'node:url'
import { AgentClient } from './agent-cli/agent-client.ts'
import { type CliArguments, parseArguments, UsageError } from './agent-cli/arguments.ts'
import { askApproval, dim, renderEvent } from './agent-cli/terminal.ts'
import { DEFAULT_TOOLS, RUN_COMMAND } from './agent-cli/workspace-tools.ts'

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
  const prompt = args.approve === 'ask' ? askApproval : args.approve
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
