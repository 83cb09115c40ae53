/**
 * Structural checks for what upstreams send on every request: a chat.completion and each
 * chat.completion.chunk. Inside workerd zod cannot compile its parsers (code generation from
 * strings is disallowed), and its generic path was the largest share of the chat worker's own
 * time in profiles. These checks accept a subset of what ChatCompletionSchema /
 * ChatCompletionChunkSchema accept — the shapes real providers send — and return the value as
 * it is (the schemas are loose and transform nothing, so zod's output equals the input). Anything
 * they do not accept goes to zod, which decides and words the failure: never more lenient than
 * the schemas (chat-wire.test.ts holds both to the same samples).
 */
import {
  type ChatCompletion,
  type ChatCompletionChunk,
  ChatCompletionChunkSchema,
  ChatCompletionSchema,
  looksLikeWireUsage,
} from './chat-wire'

type Obj = Record<string, unknown>

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
/** zod's int(): a safe integer. */
const isInt = (v: unknown): v is number => Number.isSafeInteger(v)
const isCount = (v: unknown): boolean => isInt(v) && v >= 0
/** Absent, undefined or null (zod's nullish). */
const isNullish = (v: unknown): boolean => v === undefined || v === null
const optString = (o: Obj, key: string): boolean =>
  !(key in o) || o[key] === undefined || typeof o[key] === 'string'
const nullishString = (o: Obj, key: string): boolean => isNullish(o[key]) || typeof o[key] === 'string'

const usageOk = (o: Obj): boolean => isNullish(o.usage) || looksLikeWireUsage(o.usage)

function completionToolCallOk(call: unknown): boolean {
  if (!isObject(call) || typeof call.id !== 'string' || typeof call.type !== 'string') return false
  const fn = call.function
  return isObject(fn) && typeof fn.name === 'string' && typeof fn.arguments === 'string'
}

function completionChoiceOk(choice: unknown): boolean {
  if (!isObject(choice) || !isCount(choice.index) || !nullishString(choice, 'finish_reason')) return false
  const message = choice.message
  if (!isObject(message) || typeof message.role !== 'string') return false
  if (!nullishString(message, 'content') || !nullishString(message, 'refusal')) return false
  const calls = message.tool_calls
  return isNullish(calls) || (Array.isArray(calls) && calls.every(completionToolCallOk))
}

/** The hand-written check for a chat.completion (a subset of ChatCompletionSchema). */
export function looksLikeChatCompletion(json: unknown): json is ChatCompletion {
  return (
    isObject(json) &&
    typeof json.id === 'string' &&
    json.object === 'chat.completion' &&
    isInt(json.created) &&
    typeof json.model === 'string' &&
    Array.isArray(json.choices) &&
    json.choices.every(completionChoiceOk) &&
    usageOk(json)
  )
}

/** `json` as a chat.completion, or null when it is not one. */
export function readChatCompletion(json: unknown): ChatCompletion | null {
  if (looksLikeChatCompletion(json)) return json
  const parsed = ChatCompletionSchema.safeParse(json)
  return parsed.success ? parsed.data : null
}

function deltaToolCallOk(call: unknown): boolean {
  if (!isObject(call) || !isCount(call.index) || !optString(call, 'id')) return false
  if (call.type !== undefined && call.type !== 'function') return false
  const fn = call.function
  return fn === undefined || (isObject(fn) && optString(fn, 'name') && optString(fn, 'arguments'))
}

function chunkChoiceOk(choice: unknown): boolean {
  if (!isObject(choice) || !isCount(choice.index) || !nullishString(choice, 'finish_reason')) return false
  const delta = choice.delta
  if (delta === undefined) return true
  if (!isObject(delta) || !optString(delta, 'role')) return false
  if (!nullishString(delta, 'content') || !nullishString(delta, 'refusal')) return false
  if (!nullishString(delta, 'reasoning_content')) return false
  const calls = delta.tool_calls
  return isNullish(calls) || (Array.isArray(calls) && calls.every(deltaToolCallOk))
}

/** The hand-written check for a chat.completion.chunk (a subset of ChatCompletionChunkSchema). */
export function looksLikeChatCompletionChunk(json: unknown): json is ChatCompletionChunk {
  return (
    isObject(json) &&
    optString(json, 'id') &&
    (json.object === undefined || json.object === 'chat.completion.chunk') &&
    (json.created === undefined || isInt(json.created)) &&
    optString(json, 'model') &&
    Array.isArray(json.choices) &&
    json.choices.every(chunkChoiceOk) &&
    usageOk(json)
  )
}

/** `json` as a chat.completion.chunk, or null when it is not one. */
export function readChatCompletionChunk(json: unknown): ChatCompletionChunk | null {
  if (looksLikeChatCompletionChunk(json)) return json
  const parsed = ChatCompletionChunkSchema.safeParse(json)
  return parsed.success ? parsed.data : null
}
