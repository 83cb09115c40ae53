/**
 * The common chat request, checked by hand: inside workerd zod cannot compile its parsers (code
 * generation from strings is disallowed) and its generic path over ChatCompletionRequestSchema
 * was about a tenth of the chat worker's own time in profiles.
 *
 * `readCommonChatRequest` accepts a subset of what ChatCompletionRequestSchema accepts — text
 * conversations: system/user/assistant/tool messages whose content is a string or text parts,
 * with the sampling, length, stream and stop fields — and builds the same value zod would (the
 * same fields, in the schema's order, unknown fields dropped). Anything else (tools, images,
 * response_format, metadata, unknown fields, any invalid value) returns null and goes to zod,
 * which decides and words the refusal. chat-request-check.test.ts holds the two to the same
 * answer over several hundred requests.
 */
import { MODEL_ALIASES } from '../../../shared/catalog/model-aliases'
import { REASONING_EFFORTS } from '../../../shared/providers/chat-wire'
import type { ChatCompletionRequest, ChatMessage } from './chat.schemas'

type Obj = Record<string, unknown>

const ALIASES: ReadonlySet<unknown> = new Set(MODEL_ALIASES)
const EFFORTS: ReadonlySet<unknown> = new Set(REASONING_EFFORTS)
const TEXT_ROLES: ReadonlySet<unknown> = new Set(['system', 'user', 'assistant', 'tool'])

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
const isSafeInt = (v: unknown): v is number => Number.isSafeInteger(v)
const isNumberIn = (v: unknown, min: number, max: number): v is number =>
  typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max

/** Top-level fields this path decides, in ChatCompletionRequestSchema's order. */
const REQUEST_FIELDS = [
  'model',
  'messages',
  'stream',
  'stream_options',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'reasoning_effort',
  'n',
  'seed',
  'stop',
  'presence_penalty',
  'frequency_penalty',
  'logprobs',
  'top_logprobs',
  'user',
] as const
const REQUEST_FIELD_SET: ReadonlySet<string> = new Set(REQUEST_FIELDS)
const MESSAGE_FIELDS: ReadonlySet<string> = new Set(['role', 'content', 'name', 'tool_call_id'])

/** The text parts of a content array, copied, or null when any part is something else. */
function textParts(content: readonly unknown[]): { type: 'text'; text: string }[] | null {
  const parts: { type: 'text'; text: string }[] = []
  for (const part of content) {
    if (!isObject(part) || part.type !== 'text' || typeof part.text !== 'string') return null
    let keys = 0
    for (const _ in part) keys++
    if (keys !== 2) return null
    parts.push({ type: 'text', text: part.text })
  }
  return parts
}

function readMessage(raw: unknown): ChatMessage | null {
  if (!isObject(raw)) return null
  for (const key in raw) if (!MESSAGE_FIELDS.has(key)) return null
  const { role, content, name, tool_call_id: toolCallId } = raw
  if (!TEXT_ROLES.has(role)) return null
  let checkedContent: string | { type: 'text'; text: string }[]
  if (typeof content === 'string') checkedContent = content
  else if (Array.isArray(content)) {
    const parts = textParts(content)
    if (!parts) return null
    checkedContent = parts
  } else return null
  if (name !== undefined && (typeof name !== 'string' || name.length < 1 || name.length > 64)) return null
  if (toolCallId !== undefined && (typeof toolCallId !== 'string' || toolCallId.length < 1)) return null
  if (role === 'tool' && toolCallId === undefined) return null
  const message = { role, content: checkedContent } as ChatMessage & Obj
  if (name !== undefined) message.name = name
  if (toolCallId !== undefined) message.tool_call_id = toolCallId
  return message
}

/** Checks one decided field; false sends the request to zod. */
function fieldOk(key: (typeof REQUEST_FIELDS)[number], value: unknown, body: Obj): boolean {
  switch (key) {
    case 'model':
      return ALIASES.has(value)
    case 'messages':
      return true // checked by the caller
    case 'stream':
      return typeof value === 'boolean'
    case 'stream_options': {
      if (value === null) return true
      if (!isObject(value)) return false
      for (const option in value) {
        if (option !== 'include_usage' && option !== 'include_obfuscation') return false
        if (typeof value[option] !== 'boolean') return false
      }
      return true
    }
    case 'max_tokens':
    case 'max_completion_tokens':
      return isSafeInt(value) && value >= 1
    case 'temperature':
      return value === null || isNumberIn(value, 0, 2)
    case 'top_p':
      return value === null || isNumberIn(value, 0, 1)
    case 'reasoning_effort':
      return EFFORTS.has(value)
    case 'n':
      return isSafeInt(value) && value >= 1 && value <= 128
    case 'seed':
      return isSafeInt(value)
    case 'stop':
      return (
        value === null ||
        typeof value === 'string' ||
        (Array.isArray(value) && value.length <= 4 && value.every((s) => typeof s === 'string'))
      )
    case 'presence_penalty':
    case 'frequency_penalty':
      return value === null || isNumberIn(value, -2, 2)
    case 'logprobs':
      return value === null || typeof value === 'boolean'
    case 'top_logprobs':
      return value === null || (isSafeInt(value) && value >= 0 && value <= 20 && body.logprobs === true)
    case 'user':
      return typeof value === 'string' && value.length <= 256
  }
}

/** The request as ChatCompletionRequestSchema would return it, or null to let zod decide. */
export function readCommonChatRequest(body: unknown): ChatCompletionRequest | null {
  if (!isObject(body)) return null
  for (const key in body) if (!REQUEST_FIELD_SET.has(key)) return null
  const rawMessages = body.messages
  if (!Array.isArray(rawMessages) || rawMessages.length === 0) return null
  const messages: ChatMessage[] = []
  for (const raw of rawMessages) {
    const message = readMessage(raw)
    if (!message) return null
    messages.push(message)
  }
  const request: Obj = {}
  for (const key of REQUEST_FIELDS) {
    if (!(key in body)) continue
    const value = body[key]
    if (value === undefined || !fieldOk(key, value, body)) return null
    if (key === 'messages') request.messages = messages
    else if (key === 'stream_options' && value !== null) request.stream_options = { ...(value as Obj) }
    else if (key === 'stop' && Array.isArray(value)) request.stop = [...value]
    else request[key] = value
  }
  if (!('model' in request)) return null
  return request as ChatCompletionRequest
}
