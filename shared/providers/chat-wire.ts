/**
 * The OpenAI chat-completions wire format as the provider layer sees it.
 *
 * - `ProviderChatRequest` is the structural shape the provider layer reads from a request that
 *   `functions/chat/src/chat.schemas.ts` has already validated (that file's inferred type is
 *   assignable to it; its test checks so). Fields the layer does not interpret are carried
 *   through the index signature and forwarded to OpenAI-compatible upstreams unchanged.
 * - The zod schemas below validate what upstreams send back (a boundary like any other):
 *   completions, stream chunks and usage. They are loose on purpose: OpenAI adds fields
 *   (`system_fingerprint`, `service_tier`, `logprobs`, ...) that clients expect to receive.
 */
import { z } from 'zod'
import { isWireUsage } from './chat-wire.validator.generated'

export const CHAT_ROLES = ['system', 'user', 'assistant', 'tool'] as const
export type ChatRole = (typeof CHAT_ROLES)[number]

export const REASONING_EFFORTS = ['low', 'medium', 'high', 'xhigh', 'max', 'ultracode'] as const
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number]

export interface ChatContentPart {
  readonly type: string
  readonly text?: string
  readonly [key: string]: unknown
}

export interface ChatToolCall {
  readonly id: string
  readonly type: 'function'
  readonly function: { readonly name: string; readonly arguments: string }
}

export interface ProviderChatMessage {
  readonly role: ChatRole
  readonly content?: string | readonly ChatContentPart[] | null
  readonly name?: string
  readonly tool_call_id?: string
  readonly tool_calls?: readonly ChatToolCall[]
  readonly [key: string]: unknown
}

export interface ChatFunctionTool {
  readonly type: 'function'
  readonly function: {
    readonly name: string
    readonly description?: string
    readonly parameters?: Readonly<Record<string, unknown>>
    readonly strict?: boolean | null
  }
}

export type ChatToolChoice =
  | 'none'
  | 'auto'
  | 'required'
  | { readonly type: 'function'; readonly function: { readonly name: string } }

export type ChatResponseFormat =
  | { readonly type: 'text' }
  | { readonly type: 'json_object' }
  | {
      readonly type: 'json_schema'
      readonly json_schema: {
        readonly name: string
        readonly description?: string
        readonly schema?: Readonly<Record<string, unknown>>
        readonly strict?: boolean | null
      }
    }

export interface ProviderChatRequest {
  readonly model: string
  readonly messages: readonly ProviderChatMessage[]
  readonly stream?: boolean
  readonly stream_options?: { readonly include_usage?: boolean } | null
  readonly max_tokens?: number
  readonly max_completion_tokens?: number
  readonly n?: number
  readonly seed?: number
  readonly tools?: readonly ChatFunctionTool[]
  readonly tool_choice?: ChatToolChoice
  readonly response_format?: ChatResponseFormat
  readonly reasoning_effort?: ReasoningEffort
  readonly [key: string]: unknown
}

/** The text parts of a message's content, joined with `separator` (images and audio carry no text). */
export function contentText(content: ProviderChatMessage['content'], separator = ''): string {
  if (typeof content === 'string') return content
  if (!content) return ''
  return content
    .map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
    .join(separator)
}

/** The output budget the client asked for (`max_completion_tokens` wins, as at OpenAI). */
export function requestedMaxTokens(request: ProviderChatRequest): number | null {
  return request.max_completion_tokens ?? request.max_tokens ?? null
}

// ---------------------------------------------------------------------------------------------
// Upstream responses

const count = z.number().int().nonnegative()

export const WireUsageSchema = z
  .object({
    prompt_tokens: count,
    completion_tokens: count,
    total_tokens: count.optional(),
    prompt_tokens_details: z.object({ cached_tokens: count.nullish() }).loose().nullish(),
    completion_tokens_details: z.object({ reasoning_tokens: count.nullish() }).loose().nullish(),
  })
  .loose()
export type WireUsage = z.infer<typeof WireUsageSchema>

const WireToolCallDeltaSchema = z
  .object({
    index: z.number().int().nonnegative(),
    id: z.string().optional(),
    type: z.literal('function').optional(),
    function: z.object({ name: z.string().optional(), arguments: z.string().optional() }).loose().optional(),
  })
  .loose()

export const ChatCompletionChunkSchema = z
  .object({
    id: z.string().optional(),
    object: z.literal('chat.completion.chunk').optional(),
    created: z.number().int().optional(),
    model: z.string().optional(),
    choices: z.array(
      z
        .object({
          index: z.number().int().nonnegative(),
          delta: z
            .object({
              role: z.string().optional(),
              content: z.string().nullish(),
              refusal: z.string().nullish(),
              reasoning_content: z.string().nullish(),
              tool_calls: z.array(WireToolCallDeltaSchema).nullish(),
            })
            .loose()
            .optional(),
          finish_reason: z.string().nullish(),
        })
        .loose(),
    ),
    usage: WireUsageSchema.nullish(),
  })
  .loose()
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunkSchema>

export const ChatCompletionSchema = z
  .object({
    id: z.string(),
    object: z.literal('chat.completion'),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(
      z
        .object({
          index: z.number().int().nonnegative(),
          message: z
            .object({
              role: z.string(),
              content: z.string().nullish(),
              refusal: z.string().nullish(),
              tool_calls: z
                .array(
                  z
                    .object({
                      id: z.string(),
                      type: z.string(),
                      function: z.object({ name: z.string(), arguments: z.string() }).loose(),
                    })
                    .loose(),
                )
                .nullish(),
            })
            .loose(),
          finish_reason: z.string().nullish(),
        })
        .loose(),
    ),
    usage: WireUsageSchema.nullish(),
  })
  .loose()
export type ChatCompletion = z.infer<typeof ChatCompletionSchema>

/** OpenAI's error body, as upstreams send it on 4xx/5xx and inside a stream. */
export const WireErrorBodySchema = z.object({
  error: z
    .object({
      message: z.string().optional(),
      type: z.string().nullish(),
      param: z.string().nullish(),
      code: z.union([z.string(), z.number()]).nullish(),
    })
    .loose(),
})

// ---------------------------------------------------------------------------------------------
// Usage

/** Usage in the ledger's terms: cached tokens are part of prompt tokens, reasoning tokens part of completion tokens (OpenAI's convention). */
export interface NormalizedUsage {
  readonly promptTokens: number
  readonly completionTokens: number
  readonly totalTokens: number
  readonly cachedTokens: number
  readonly reasoningTokens: number
}

export function normalizeUsage(raw: unknown): NormalizedUsage | null {
  let u: WireUsage
  // The validator generated from WireUsageSchema accepts exactly what it accepts (the schema is
  // loose and transforms nothing, so its output is the input); zod is left for the rare refusal.
  if (isWireUsage(raw)) u = raw as WireUsage
  else {
    const parsed = WireUsageSchema.safeParse(raw)
    if (!parsed.success) return null
    u = parsed.data
  }
  return {
    promptTokens: u.prompt_tokens,
    completionTokens: u.completion_tokens,
    totalTokens: u.total_tokens ?? u.prompt_tokens + u.completion_tokens,
    cachedTokens: u.prompt_tokens_details?.cached_tokens ?? 0,
    reasoningTokens: u.completion_tokens_details?.reasoning_tokens ?? 0,
  }
}

export function usageFromCounts(
  promptTokens: number,
  completionTokens: number,
  reasoningTokens = 0,
): NormalizedUsage {
  return {
    promptTokens,
    completionTokens,
    totalTokens: promptTokens + completionTokens,
    cachedTokens: 0,
    reasoningTokens,
  }
}

/** The OpenAI `usage` object for a normalised usage. */
export function toWireUsage(usage: NormalizedUsage): WireUsage {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.totalTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedTokens, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: usage.reasoningTokens,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  }
}
