/**
 * Token counting with a real BPE (o200k_base, the encoding of OpenAI's current chat models:
 * ./tokenizer-o200k.ts, tiktoken's algorithm over a rank table kept in typed arrays).
 *
 * Chat overhead follows OpenAI's published counting for o200k models (verified by OpenAI
 * against the API): every message costs 3 tokens plus its role, content and name (a name adds
 * 1 more), and every reply is primed with 3 tokens. Tool definitions add 7 per function, 3 when
 * it has properties, 3 per property, enum items 3 each (minus 3 per enum), and 12 at the end.
 * Images are not BPE text: each image part counts as 85 tokens (OpenAI's low-detail price).
 * Special-token markers typed by users (`<|endoftext|>`) are counted as plain text.
 */
import type { ChatContentPart, ChatFunctionTool, ProviderChatMessage } from './chat-wire'
import { countTokens, decode, encode } from './tokenizer-o200k'

export const TOKENS_PER_MESSAGE = 3
export const TOKENS_PER_NAME = 1
export const REPLY_PRIMER_TOKENS = 3
export const TOKENS_PER_TOOL_CALL = 3
export const IMAGE_PART_TOKENS = 85

const TOOL_FUNCTION_INIT = 7
const TOOL_PROPERTIES_INIT = 3
const TOOL_PROPERTY_KEY = 3
const TOOL_ENUM_INIT = -3
const TOOL_ENUM_ITEM = 3
const TOOLS_END = 12

/**
 * Runs of non-space characters longer than this are counted in slices of this length. A long run
 * of letters is one pre-token (a DNA sequence or a run of one character), whose merge was
 * quadratic in gpt-tokenizer: 100,000 of them took 5.7 s to count whole, 1.4 ms sliced. The merge
 * of a long pre-token is O(n log n) now (tokenizer-o200k.ts: 0.2 s for 100,000 letters whole), and
 * slicing still costs least; counts stay what they were. Words, code and base64 never get near it;
 * for the runs that do, a slice boundary costs at most one token of difference.
 */
export const MAX_COUNTED_RUN = 256

export function countTextTokens(text: string): number {
  if (text.length === 0) return 0
  if (text.length <= MAX_COUNTED_RUN) return countTokens(text)
  let total = 0
  /** Start of the text not counted yet. */
  let from = 0
  let runStart = 0
  for (let i = 0; i <= text.length; i++) {
    const code = i < text.length ? text.charCodeAt(i) : 32
    // ASCII whitespace ends a run (other spaces only make runs look longer: harmless).
    if (code !== 32 && (code < 9 || code > 13)) continue
    if (i - runStart > MAX_COUNTED_RUN) {
      if (runStart > from) total += countTokens(text.slice(from, runStart))
      total += countRunInSlices(text, runStart, i)
      from = i
    }
    runStart = i + 1
  }
  if (from < text.length) total += countTokens(from === 0 ? text : text.slice(from))
  return total
}

function countRunInSlices(text: string, start: number, end: number): number {
  let total = 0
  for (let at = start; at < end; ) {
    let cut = Math.min(end, at + MAX_COUNTED_RUN)
    // Never between the two halves of a surrogate pair.
    if (cut < end && isLowSurrogate(text.charCodeAt(cut))) cut--
    total += countTokens(text.slice(at, cut))
    at = cut
  }
  return total
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff
}

/**
 * The first `maxTokens` tokens of `text`, decoded back to a string; a character the cut falls
 * inside is left out.
 */
export function truncateToTokens(text: string, maxTokens: number): string {
  if (maxTokens <= 0) return ''
  const tokens = encode(text)
  return tokens.length <= maxTokens ? text : decode(tokens.slice(0, maxTokens), { incompleteEnd: 'drop' })
}

/** Splits text into pieces of at most `tokensPerPiece` tokens that never cut a character in two. */
export function splitByTokens(text: string, tokensPerPiece: number): string[] {
  const tokens = encode(text)
  const pieces: string[] = []
  let pending: number[] = []
  for (const token of tokens) {
    pending.push(token)
    if (pending.length >= tokensPerPiece) {
      const piece = decode(pending)
      // A piece ending inside a multi-byte character decodes to U+FFFD: keep collecting.
      if (!piece.endsWith('\uFFFD')) {
        pieces.push(piece)
        pending = []
      }
    }
  }
  if (pending.length > 0) pieces.push(decode(pending))
  return pieces
}

function contentTokens(content: ProviderChatMessage['content']): number {
  if (content === undefined || content === null) return 0
  if (typeof content === 'string') return countTextTokens(content)
  let total = 0
  for (const part of content as readonly ChatContentPart[]) {
    if (part.type === 'text' && typeof part.text === 'string') total += countTextTokens(part.text)
    else if (part.type === 'refusal' && typeof part.refusal === 'string')
      total += countTextTokens(part.refusal)
    else if (part.type === 'image_url') total += IMAGE_PART_TOKENS
  }
  return total
}

export function countMessageTokens(message: ProviderChatMessage): number {
  let total = TOKENS_PER_MESSAGE + countTextTokens(message.role) + contentTokens(message.content)
  if (message.name !== undefined) total += countTextTokens(message.name) + TOKENS_PER_NAME
  if (message.tool_call_id !== undefined) total += countTextTokens(message.tool_call_id)
  for (const call of message.tool_calls ?? []) {
    total +=
      TOKENS_PER_TOOL_CALL + countTextTokens(call.function.name) + countTextTokens(call.function.arguments)
  }
  return total
}

interface PropertySchema {
  type?: unknown
  description?: unknown
  enum?: unknown
}

function withoutTrailingPeriod(text: string): string {
  return text.endsWith('.') ? text.slice(0, -1) : text
}

export function countToolDefinitionTokens(tools: readonly ChatFunctionTool[] | undefined): number {
  if (!tools || tools.length === 0) return 0
  let total = 0
  for (const tool of tools) {
    const fn = tool.function
    total += TOOL_FUNCTION_INIT
    total += countTextTokens(`${fn.name}:${withoutTrailingPeriod(fn.description ?? '')}`)
    const properties = fn.parameters?.properties
    if (properties && typeof properties === 'object' && Object.keys(properties).length > 0) {
      total += TOOL_PROPERTIES_INIT
      for (const [key, raw] of Object.entries(properties as Record<string, unknown>)) {
        const property = (raw ?? {}) as PropertySchema
        total += TOOL_PROPERTY_KEY
        if (Array.isArray(property.enum)) {
          total += TOOL_ENUM_INIT
          for (const item of property.enum) total += TOOL_ENUM_ITEM + countTextTokens(String(item))
        }
        const type = typeof property.type === 'string' ? property.type : JSON.stringify(property.type ?? '')
        const description = typeof property.description === 'string' ? property.description : ''
        total += countTextTokens(`${key}:${type}:${withoutTrailingPeriod(description)}`)
      }
    }
  }
  return total + TOOLS_END
}

/** Prompt tokens of a chat request as OpenAI bills them (messages, reply primer, tool definitions). */
export function countPromptTokens(
  messages: readonly ProviderChatMessage[],
  tools?: readonly ChatFunctionTool[],
): number {
  let total = REPLY_PRIMER_TOKENS
  for (const message of messages) total += countMessageTokens(message)
  return total + countToolDefinitionTokens(tools)
}
