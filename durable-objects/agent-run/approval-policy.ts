/**
 * The approval matrix of svc.code.v1: given the turn's `mode` and a tool the model wants to call,
 * decide whether the call runs at once, waits for the user, or is refused.
 *
 * Every tool is first reduced to one effect class. Server tools have a fixed class (`web_search`
 * is read_only; `update_plan` is `none`: it only reports the plan to the user); client tools
 * (including the MCP tools a host forwards) are classified by their `tags`:
 *
 * | tag (case-insensitive, `_`/space = `-`)                      | effect        |
 * |--------------------------------------------------------------|---------------|
 * | `read-only`, `readonly`, `read`                               | `read_only`   |
 * | `network`                                                     | `network`     |
 * | `edit`, `write`                                               | `edit`        |
 * | `execute`, `exec`, `shell`, `command`                         | `execute`     |
 * | `destructive`, `dangerous`                                    | `destructive` |
 *
 * Several recognised tags: the riskiest wins (destructive > execute > edit > network > read_only),
 * so a tool cannot launder a write by also saying `read-only`. Unrecognised tags are ignored.
 * A tool with no recognised tag is `unclassified` and is treated as side-effecting but not
 * destructive: hosts must tag destructive tools to get an approval prompt in `auto` mode.
 *
 * | effect         | manual  | plan    | edit    | auto    |
 * |----------------|---------|---------|---------|---------|
 * | none           | auto    | auto    | auto    | auto    |
 * | read_only      | require | auto    | auto    | auto    |
 * | network        | require | require | require | auto    |
 * | edit           | require | refuse  | require | auto    |
 * | execute        | require | refuse  | require | auto    |
 * | unclassified   | require | refuse  | require | auto    |
 * | destructive    | require | refuse  | require | require |
 *
 * (auto = `auto_approve`, require = `require_approval`, refuse = `refuse`.)
 */
import type { AgentMode, ClientTool } from './turn.schemas'

export type ToolEffect =
  | 'none'
  | 'read_only'
  | 'network'
  | 'edit'
  | 'execute'
  | 'destructive'
  | 'unclassified'
export type ApprovalDecisionKind = 'auto_approve' | 'require_approval' | 'refuse'

export interface ApprovalDecision {
  decision: ApprovalDecisionKind
  effect: ToolEffect
  /** One sentence for the user and the model: why the call runs, waits or is refused. */
  reason: string
}

/** Tools the plane itself executes, with their effect class. */
export const SERVER_TOOLS = {
  web_search: { effect: 'read_only', description: 'Searches the web and returns titled results with URLs.' },
  update_plan: {
    effect: 'none',
    description:
      'Shows the user your plan for this task: the full list of steps, each pending, in_progress, completed or cancelled. Call it again with the whole list whenever a step changes.',
  },
} as const satisfies Record<string, { effect: ToolEffect; description: string }>

export type ServerToolName = keyof typeof SERVER_TOOLS

export function isServerTool(name: string): name is ServerToolName {
  return Object.hasOwn(SERVER_TOOLS, name)
}

const TAG_EFFECTS: Record<string, Exclude<ToolEffect, 'unclassified'>> = {
  'read-only': 'read_only',
  readonly: 'read_only',
  read: 'read_only',
  network: 'network',
  edit: 'edit',
  write: 'edit',
  execute: 'execute',
  exec: 'execute',
  shell: 'execute',
  command: 'execute',
  destructive: 'destructive',
  dangerous: 'destructive',
}

const RISK: Record<ToolEffect, number> = {
  none: -1,
  read_only: 0,
  network: 1,
  edit: 2,
  unclassified: 2,
  execute: 3,
  destructive: 4,
}

function normaliseTag(tag: string): string {
  return tag
    .trim()
    .toLowerCase()
    .replace(/[_\s]+/g, '-')
}

/** The effect class of a set of tags (see the table at the top of this file). */
export function classifyTags(tags: readonly string[]): ToolEffect {
  let effect: ToolEffect | undefined
  for (const tag of tags) {
    const found = TAG_EFFECTS[normaliseTag(tag)]
    if (found && (effect === undefined || RISK[found] > RISK[effect])) effect = found
  }
  return effect ?? 'unclassified'
}

/**
 * Which executor a client tool reports in `tool_call.requested`: `mcp` for tools the host forwards
 * to an MCP server (tagged `mcp`, or named `mcp__<server>__<tool>` as Claude Code and others do),
 * `client` otherwise. Both are run by the caller; the distinction is for display and audit.
 */
export function clientToolExecutor(tool: Pick<ClientTool, 'name' | 'tags'>): 'client' | 'mcp' {
  if (tool.name.startsWith('mcp__')) return 'mcp'
  return tool.tags.some((tag) => normaliseTag(tag) === 'mcp') ? 'mcp' : 'client'
}

export type PolicyTool =
  | { executor: 'server'; name: string }
  | { executor: 'client' | 'mcp'; tool: Pick<ClientTool, 'name' | 'tags'> }

export function classifyTool(tool: PolicyTool): ToolEffect {
  if (tool.executor === 'server') {
    return isServerTool(tool.name) ? SERVER_TOOLS[tool.name].effect : 'unclassified'
  }
  return classifyTags(tool.tool.tags)
}

const MATRIX: Record<AgentMode, Record<ToolEffect, ApprovalDecisionKind>> = {
  manual: {
    none: 'auto_approve',
    read_only: 'require_approval',
    network: 'require_approval',
    edit: 'require_approval',
    execute: 'require_approval',
    unclassified: 'require_approval',
    destructive: 'require_approval',
  },
  plan: {
    none: 'auto_approve',
    read_only: 'auto_approve',
    network: 'require_approval',
    edit: 'refuse',
    execute: 'refuse',
    unclassified: 'refuse',
    destructive: 'refuse',
  },
  edit: {
    none: 'auto_approve',
    read_only: 'auto_approve',
    network: 'require_approval',
    edit: 'require_approval',
    execute: 'require_approval',
    unclassified: 'require_approval',
    destructive: 'require_approval',
  },
  auto: {
    none: 'auto_approve',
    read_only: 'auto_approve',
    network: 'auto_approve',
    edit: 'auto_approve',
    execute: 'auto_approve',
    unclassified: 'auto_approve',
    destructive: 'require_approval',
  },
}

const EFFECT_WORDS: Record<ToolEffect, string> = {
  none: 'only updates the plan shown to the user',
  read_only: 'read-only',
  network: 'network access',
  edit: 'edits files',
  execute: 'executes commands',
  destructive: 'destructive',
  unclassified: 'untagged, so treated as side-effecting',
}

const MODE_RULE: Record<AgentMode, string> = {
  manual: 'manual mode asks the user before every tool call',
  plan: 'plan mode runs read-only tools only and asks before network access',
  edit: 'edit mode runs read-only tools at once and asks before anything else',
  auto: 'auto mode runs tools at once except destructive ones',
}

/** The decision for one tool call in one mode. Pure: same input, same answer. */
export function decideApproval(mode: AgentMode, tool: PolicyTool): ApprovalDecision {
  const effect = classifyTool(tool)
  const decision = MATRIX[mode][effect]
  const name = tool.executor === 'server' ? tool.name : tool.tool.name
  const verb =
    decision === 'auto_approve'
      ? 'runs without asking'
      : decision === 'refuse'
        ? 'is refused'
        : 'needs approval'
  return { decision, effect, reason: `${name} (${EFFECT_WORDS[effect]}) ${verb}: ${MODE_RULE[mode]}` }
}

/** How long a pending approval waits for an answer before it resolves as a deny by `expiry`. */
export const APPROVAL_TTL_MS = 15 * 60 * 1000

export function approvalExpiresAt(now: Date, ttlMs: number = APPROVAL_TTL_MS): string {
  return new Date(now.getTime() + ttlMs).toISOString()
}
