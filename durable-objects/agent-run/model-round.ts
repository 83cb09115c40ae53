/**
 * One model call of an agent turn: a streamed chat completion through the provider layer
 * (shared/providers: failover, retries, circuit breaker, the simulated model for test keys),
 * read back as deltas. Text and reasoning deltas are handed to the caller as they arrive (all the
 * deltas of one network read are joined into one, so a fast upstream does not cost one stored
 * event per token); tool call fragments are assembled by index.
 *
 * Errors before the first byte are the provider layer's AppErrors (502 every provider failed,
 * 503 none configured, 400 the request was refused, 499 aborted); a stream that breaks after it
 * started ends with `status: 'cut'` and what had arrived.
 */
import type { ModelAlias } from '../../shared/catalog/model-aliases'
import {
  createChatCompletion,
  type NormalizedUsage,
  type ProviderChatRequest,
  type ProviderEnv,
  providerRegistryFromEnv,
  SseParser,
} from '../../shared/providers'
import { ChatCompletionChunkSchema } from '../../shared/providers/chat-wire'
import { readChatCompletionChunk } from '../../shared/providers/wire-check'

export interface ModelRoundInput {
  readonly request: ProviderChatRequest
  readonly alias: ModelAlias
  readonly testMode: boolean
  readonly env: ProviderEnv
  readonly signal: AbortSignal
  readonly requestId: string
  readonly onText: (delta: string) => void
  readonly onReasoning: (delta: string) => void
}

export interface ModelToolCall {
  readonly modelCallId: string
  readonly name: string
  readonly arguments: string
}

export interface ModelRoundOutput {
  readonly text: string
  readonly refusal: string
  readonly toolCalls: readonly ModelToolCall[]
  readonly finishReason: string | null
  readonly usage: NormalizedUsage
  /** True when the provider reported no usage and it was counted with the tokenizer. */
  readonly usageEstimated: boolean
  readonly status: 'completed' | 'cut'
  readonly error: { readonly code: string; readonly message: string } | null
  /** Upstream provider that answered (for cost and logs). */
  readonly providerId: string
}

interface PartialCall {
  id: string
  name: string
  arguments: string
}

export async function runModelRound(input: ModelRoundInput): Promise<ModelRoundOutput> {
  const result = await createChatCompletion({
    request: input.request,
    alias: input.alias,
    mode: input.testMode ? 'test' : 'live',
    registry: input.testMode ? null : providerRegistryFromEnv(input.env),
    env: input.env,
    signal: input.signal,
    requestId: input.requestId,
  })
  if (result.kind !== 'stream') throw new Error('the provider layer answered a stream request with JSON')

  const parser = new SseParser()
  const calls: PartialCall[] = []
  let text = ''
  let refusal = ''
  let finishReason: string | null = null
  let streamError: { code: string; message: string } | null = null

  const handle = (data: string, round: { text: string; reasoning: string }) => {
    if (data === '[DONE]') return
    const json: unknown = JSON.parse(data)
    if (json !== null && typeof json === 'object' && 'error' in json) {
      const error = (json as { error: { code?: unknown; message?: unknown } }).error
      streamError = {
        code: typeof error.code === 'string' ? error.code : 'upstream_stream_interrupted',
        message: typeof error.message === 'string' ? error.message : 'the model stream broke off',
      }
      return
    }
    const chunk = readChatCompletionChunk(json) ?? ChatCompletionChunkSchema.parse(json)
    for (const choice of chunk.choices) {
      if (choice.index !== 0) continue
      const delta = choice.delta
      if (delta?.content) round.text += delta.content
      if (delta?.reasoning_content) round.reasoning += delta.reasoning_content
      if (delta?.refusal) refusal += delta.refusal
      for (const fragment of delta?.tool_calls ?? []) {
        let call = calls[fragment.index]
        if (!call) {
          call = { id: '', name: '', arguments: '' }
          calls[fragment.index] = call
        }
        if (fragment.id) call.id = fragment.id
        if (fragment.function?.name) call.name += fragment.function.name
        if (fragment.function?.arguments) call.arguments += fragment.function.arguments
      }
      if (choice.finish_reason) finishReason = choice.finish_reason
    }
  }

  const reader = result.stream.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      const round = { text: '', reasoning: '' }
      const events = done ? parser.end() : parser.pushBytes(value)
      for (const event of events) if (event.kind === 'data') handle(event.data, round)
      if (round.reasoning) input.onReasoning(round.reasoning)
      if (round.text) {
        text += round.text
        input.onText(round.text)
      }
      if (done) break
    }
  } catch (err) {
    if (input.signal.aborted) throw input.signal.reason
    throw err
  } finally {
    reader.releaseLock()
  }
  const outcome = await result.outcome
  if (input.signal.aborted) throw input.signal.reason
  const error: { code: string; message: string } | null = streamError ?? outcome.error
  return {
    text,
    refusal,
    toolCalls: calls
      .filter((call) => call.name !== '')
      .map((call) => ({ modelCallId: call.id, name: call.name, arguments: call.arguments })),
    finishReason,
    usage: outcome.usage,
    usageEstimated: outcome.usageSource === 'estimated',
    status: error || outcome.status !== 'completed' ? 'cut' : 'completed',
    error,
    providerId: result.target.providerId,
  }
}
