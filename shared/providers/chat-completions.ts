/**
 * One model call: validated request in, completion out, plus the usage to meter. Live requests
 * go to the configured upstreams; test-mode requests only ever reach the built-in simulated model.
 * A stream comes back as SSE for a chat client (`streamAs: 'sse'`, the default) or as the typed
 * chunks the SSE is written from (`streamAs: 'chunks'`, the agent loop).
 */
import type { ModelAlias } from '../catalog/model-aliases'
import { type ChatChunkSource, readChatChunks, type StreamOutcome } from './chat-chunks'
import { relayChatStream } from './chat-stream'
import {
  type ChatCompletion,
  type NormalizedUsage,
  normalizeUsage,
  type ProviderChatRequest,
  toWireUsage,
  usageFromCounts,
} from './chat-wire'
import {
  BreakerSettingsSchema,
  type ProviderRegistry,
  type ProviderTarget,
  providerNotConfigured,
  RetrySettingsSchema,
  simulatedTargets,
} from './provider-config'
import { countPromptTokens, countTextTokens } from './tokenizer'
import {
  defaultUpstreamDeps,
  type ProviderEnv,
  sendChatCompletion,
  type UpstreamAttempt,
  type UpstreamDeps,
} from './upstream-client'

export type ChatMode = 'live' | 'test'

export interface ChatCompletionInput {
  readonly request: ProviderChatRequest
  readonly alias: ModelAlias
  /** 'test' for svc_sk_test_ keys: answered by the simulated model, never by an upstream. */
  readonly mode: ChatMode
  /** From providerRegistryFromEnv(env); null when MODEL_PROVIDERS is unset. Unused in test mode. */
  readonly registry: ProviderRegistry | null
  readonly env: ProviderEnv
  /** The client request's signal: aborting it aborts the upstream request. */
  readonly signal?: AbortSignal
  readonly requestId?: string
  readonly deps?: Partial<UpstreamDeps>
  /** How a stream is handed back: SSE bytes for a chat client, or its typed chunks. */
  readonly streamAs?: 'sse' | 'chunks'
  /** SSE streams: runs before the stream's last event goes out (see RelayOptions.beforeEnd). */
  readonly beforeStreamEnd?: (outcome: StreamOutcome, target: ResultBase['target']) => Promise<unknown>
}

export interface ResultBase {
  readonly target: { readonly providerId: string; readonly upstreamModel: string }
  readonly attempts: readonly UpstreamAttempt[]
}

export type ChatCompletionJson = ResultBase & {
  readonly kind: 'json'
  /** The body to send: `model` is the alias, `usage` always present. */
  readonly completion: ChatCompletion
  readonly usage: NormalizedUsage
  readonly usageSource: 'upstream' | 'estimated'
}

export type ChatCompletionSse = ResultBase & {
  readonly kind: 'stream'
  /** SSE bytes for the client (content-type text/event-stream). */
  readonly stream: ReadableStream<Uint8Array>
  /** Settles when the stream ended (completed, cut, or client gone) with the usage to meter. */
  readonly outcome: Promise<StreamOutcome>
  /** The usage so far, for checkpoints while the stream runs. */
  readonly progress: () => NormalizedUsage
}

export type ChatCompletionChunks = ResultBase & {
  readonly kind: 'chunks'
  /** The stream's typed items, its outcome and progress (chat-chunks.ts). */
  readonly chunks: ChatChunkSource
}

/** What a chat client gets: JSON, or the stream as SSE. */
export type ChatCompletionResult = ChatCompletionJson | ChatCompletionSse

function completionText(completion: ChatCompletion): string {
  let text = ''
  for (const choice of completion.choices) {
    text += (choice.message.content ?? '') + (choice.message.refusal ?? '')
    for (const call of choice.message.tool_calls ?? []) text += call.function.name + call.function.arguments
  }
  return text
}

function targetsFor(input: ChatCompletionInput): readonly ProviderTarget[] {
  if (input.mode === 'test') return simulatedTargets(input.alias)
  if (!input.registry) {
    throw providerNotConfigured(input.alias)
  }
  return input.registry.targetsFor(input.alias)
}

export function createChatCompletion(
  input: ChatCompletionInput & { readonly streamAs: 'chunks' },
): Promise<ChatCompletionJson | ChatCompletionChunks>
export function createChatCompletion(input: ChatCompletionInput): Promise<ChatCompletionResult>
export async function createChatCompletion(
  input: ChatCompletionInput,
): Promise<ChatCompletionJson | ChatCompletionSse | ChatCompletionChunks> {
  const deps = defaultUpstreamDeps(input.deps)
  const config = input.mode === 'live' ? input.registry?.config : undefined
  const success = await sendChatCompletion(
    {
      alias: input.alias,
      request: input.request,
      targets: targetsFor(input),
      env: input.env,
      retry: config?.retry ?? RetrySettingsSchema.parse({}),
      breaker: config?.breaker ?? BreakerSettingsSchema.parse({}),
      ...(input.signal ? { signal: input.signal } : {}),
      ...(input.requestId ? { requestId: input.requestId } : {}),
    },
    deps,
  )
  const target = { providerId: success.target.provider.id, upstreamModel: success.target.upstreamModel }
  const promptTokens = () => countPromptTokens(input.request.messages, input.request.tools)

  if (success.kind === 'json') {
    const reported = normalizeUsage(success.completion.usage)
    const usage =
      reported ?? usageFromCounts(promptTokens(), countTextTokens(completionText(success.completion)))
    return {
      kind: 'json',
      completion: {
        ...success.completion,
        model: input.alias,
        usage: success.completion.usage ?? toWireUsage(usage),
      },
      usage,
      usageSource: reported ? 'upstream' : 'estimated',
      target,
      attempts: success.attempts,
    }
  }

  const recordCut = (result: StreamOutcome) => {
    if (result.status === 'upstream_cut') success.breaker.recordFailure(deps.now())
    return result
  }
  const streamOptions = {
    alias: input.alias,
    promptTokens,
    idleTimeoutMs: success.target.provider.streamIdleTimeoutMs,
    abortUpstream: success.abort,
    ...(input.signal ? { signal: input.signal } : {}),
  }
  if (input.streamAs === 'chunks') {
    const chunks = readChatChunks(success.body, streamOptions)
    void chunks.outcome.then(recordCut)
    return { kind: 'chunks', chunks, target, attempts: success.attempts }
  }
  const relay = relayChatStream(success.body, {
    ...streamOptions,
    includeUsage: input.request.stream_options?.include_usage === true,
    ...(input.beforeStreamEnd
      ? { beforeEnd: (o: StreamOutcome) => input.beforeStreamEnd?.(o, target) ?? Promise.resolve() }
      : {}),
  })
  return {
    kind: 'stream',
    stream: relay.stream,
    outcome: relay.outcome.then(recordCut),
    progress: relay.progress,
    target,
    attempts: success.attempts,
  }
}
