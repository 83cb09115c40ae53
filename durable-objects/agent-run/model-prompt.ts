/**
 * What the model is given for a turn: the system prompt (the mode's rules, the workspace and the
 * client's capabilities), the tools it may call (the client's, then the plane's own), and the
 * messages taken from a first turn's free-form transcript.
 */
import { z } from 'zod'
import type { ChatFunctionTool, ProviderChatMessage } from '../../shared/providers/chat-wire'
import { EventData } from './agent-events'
import { SERVER_TOOLS } from './approval-policy'
import { cut } from './tool-output'
import type { TurnSettings } from './turn-settings'

/** Messages taken from a first turn's transcript, and their size. */
const TRANSCRIPT_LIMITS = { messages: 200, chars: 100_000 }

/** The JSON Schema of a zod schema, as a tool's `parameters`. */
function parametersOf(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...parameters } = z.toJSONSchema(schema)
  return parameters
}

const SERVER_TOOL_PARAMETERS: Record<keyof typeof SERVER_TOOLS, Record<string, unknown>> = {
  web_search: {
    type: 'object',
    properties: {
      query: { type: 'string', description: 'What to search for' },
      count: { type: 'integer', minimum: 1, maximum: 10, description: 'Results wanted (default 5)' },
    },
    required: ['query'],
    additionalProperties: false,
  },
  // The task plan the model keeps: its arguments are the `plan.updated` event's data.
  update_plan: parametersOf(EventData['plan.updated']),
}

const MODE_PROMPT: Record<TurnSettings['mode'], string> = {
  manual: 'Manual mode: the user approves every tool call before it runs.',
  plan: 'Plan mode: only read-only tools run; do not try to edit files or run commands, propose a plan instead.',
  edit: 'Edit mode: read-only tools run at once; edits and commands wait for the user to approve them.',
  auto: 'Auto mode: tools run without asking, except destructive ones.',
}

export function systemPrompt(settings: TurnSettings): string {
  return [
    "You are svc's coding agent. You work in the user's workspace through tools.",
    MODE_PROMPT[settings.mode],
    "Client tools run on the user's machine. When a call is denied or refused, do not repeat it: say why you needed it and continue without it.",
    'For work of several steps, call update_plan with the whole list of steps and keep it current.',
    `Workspace: ${settings.workspace_context}`,
    `Client capabilities: ${settings.capabilities_context}`,
  ].join('\n')
}

/** The client's tools, then web_search (when the billing plan includes it) and update_plan. */
export function toolsFor(settings: TurnSettings): ChatFunctionTool[] {
  const tools: ChatFunctionTool[] = settings.client_tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.input_schema },
  }))
  for (const name of Object.keys(SERVER_TOOLS) as (keyof typeof SERVER_TOOLS)[]) {
    if (name === 'web_search' && !settings.web_search) continue
    tools.push({
      type: 'function',
      function: {
        name,
        description: SERVER_TOOLS[name].description,
        parameters: SERVER_TOOL_PARAMETERS[name],
      },
    })
  }
  return tools
}

/** Chat messages from a first turn's free-form transcript: `{role, content: string}` entries only. */
export function transcriptMessages(transcript: readonly unknown[]): ProviderChatMessage[] {
  const messages: ProviderChatMessage[] = []
  for (const entry of transcript.slice(-TRANSCRIPT_LIMITS.messages)) {
    if (entry === null || typeof entry !== 'object') continue
    const { role, content } = entry as { role?: unknown; content?: unknown }
    if ((role === 'user' || role === 'assistant' || role === 'system') && typeof content === 'string') {
      messages.push({ role, content: cut(content, TRANSCRIPT_LIMITS.chars) })
    }
  }
  return messages
}
