/**
 * One model call of an agent turn: a streamed chat completion through the provider layer
 * (shared/providers: failover, retries, circuit breaker, the simulated model for test keys), read
 * as the typed chunks the provider layer hands over (no SSE in between). Text and reasoning deltas
 * are handed to the caller as they arrive (all the deltas of one network read are joined into one,
 * so a fast upstream does not cost one stored event per token); tool call fragments are assembled
 * by index.
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
} from '../../shared/providers'

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
    streamAs: 'chunks',
  })
  if (result.kind !== 'chunks') throw new Error('the provider layer answered a stream request with JSON')

  const calls: PartialCall[] = []
  let text = ''
  let refusal = ''
  let finishReason: string | null = null
  let streamError: { code: string; message: string } | null = null
  try {
    for await (const items of result.chunks) {
      let roundText = ''
      let roundReasoning = ''
      for (const item of items) {
        if (item.type === 'error') streamError = item.error
        if (item.type !== 'chunk') continue
        for (const choice of item.chunk.choices) {
          if (choice.index !== 0) continue
          const delta = choice.delta
          if (delta?.content) roundText += delta.content
          if (delta?.reasoning_content) roundReasoning += delta.reasoning_content
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
      if (roundReasoning) input.onReasoning(roundReasoning)
      if (roundText) {
        text += roundText
        input.onText(roundText)
      }
    }
  } catch (err) {
    result.chunks.cancel()
    if (input.signal.aborted) throw input.signal.reason
    throw err
  }
  const outcome = await result.chunks.outcome
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
