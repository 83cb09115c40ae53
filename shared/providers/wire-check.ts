/**
 * What upstreams send on every request, a chat.completion and each chat.completion.chunk, checked
 * by the validators generated from ChatCompletionSchema / ChatCompletionChunkSchema
 * (scripts/generate-validators.ts): inside workerd zod cannot compile its parsers and its generic
 * path was the largest share of the chat worker's own time. The schemas are loose and transform
 * nothing, so the generated check accepts exactly what they accept and the value is returned as
 * it is; wire-check.test.ts holds the two to the same answers.
 */
import type { ChatCompletion, ChatCompletionChunk } from './chat-wire'
import { isChatCompletion, isChatCompletionChunk } from './chat-wire.validator.generated'

/** `json` as a chat.completion, or null when it is not one. */
export function readChatCompletion(json: unknown): ChatCompletion | null {
  return isChatCompletion(json) ? (json as ChatCompletion) : null
}

/** `json` as a chat.completion.chunk, or null when it is not one. */
export function readChatCompletionChunk(json: unknown): ChatCompletionChunk | null {
  return isChatCompletionChunk(json) ? (json as ChatCompletionChunk) : null
}
