/** The provider layer of chat completions: see docs/providers.md. */

export {
  type ChatChunkSource,
  type ChatStreamItem,
  readChatChunks,
  type StreamOutcome,
  type StreamStatus,
} from './chat-chunks'
export {
  type ChatCompletionInput,
  type ChatCompletionResult,
  type ChatMode,
  createChatCompletion,
} from './chat-completions'
export { type ChatStreamOptions, relayChatStream } from './chat-stream'
export {
  type ChatCompletion,
  type ChatCompletionChunk,
  type NormalizedUsage,
  normalizeUsage,
  type ProviderChatRequest,
  requestedMaxTokens,
  toWireUsage,
} from './chat-wire'
export { BreakerBoard, CircuitBreaker, isolateBreakers } from './circuit-breaker'
export {
  MODEL_PROVIDERS_VAR,
  type ProviderConfig,
  ProviderConfigError,
  type ProviderRegistry,
  type ProviderTarget,
  parseProviderConfig,
  providerNotConfigured,
  providerRegistryFromEnv,
  requireProvider,
} from './provider-config'
export { planSimulatedCompletion, simulateChatCompletion } from './simulated-model'
export { SseParser, sseData } from './sse'
export {
  countMessageTokens,
  countPromptTokens,
  countTextTokens,
  countToolDefinitionTokens,
} from './tokenizer'
export {
  type ProviderEnv,
  sendChatCompletion,
  type UpstreamAttempt,
  type UpstreamDeps,
} from './upstream-client'
export type { WorkersAiBinding } from './workers-ai'
