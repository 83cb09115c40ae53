/**
 * An upstream's OpenAI-compatible SSE stream read once into typed items: validated
 * `chat.completion.chunk`s (with the stream's own id, created and the alias as model), comments,
 * and exactly one terminal item (`done`, or `error`). Both consumers read the same items: the chat
 * relay (chat-stream.ts) writes them back as SSE for chat clients, and the agent loop reads them
 * directly, so no model output is serialised to SSE and parsed back inside one isolate.
 *
 * The source reads the upstream only as fast as its consumer asks for the next batch (one batch
 * per network read, so what arrived together stays together); it also owns what only a reader of
 * the network can do: the idle timeout, reading what follows `[DONE]` so the connection can be
 * reused, and stopping the upstream when the stream ends early or the caller's signal aborts.
 *
 * `outcome` settles when the stream is over: how it ended and the usage to bill — the upstream's
 * own usage when it arrived, otherwise an estimate made with the tokenizer (prompt tokens from the
 * request, completion tokens from the text streamed so far).
 */
import { type ChatCompletionChunk, type NormalizedUsage, normalizeUsage, usageFromCounts } from './chat-wire'
import { type SseEvent, SseParser } from './sse'
import { countTextTokens } from './tokenizer'
import { readChatCompletionChunk } from './wire-check'

export interface ChatChunkOptions {
  /** The model name every chunk carries (the alias the client asked for). */
  readonly alias: string
  /** Prompt tokens for the usage estimate; called only when the upstream reported no usage. */
  readonly promptTokens: () => number
  /** Forces the chunk id (otherwise the first upstream chunk's id is used for all). */
  readonly completionId?: string
  /** Forces `created` (otherwise the first upstream chunk's value is used for all). */
  readonly created?: number
}

export type StreamStatus = 'completed' | 'upstream_cut' | 'upstream_error' | 'client_cancelled'

export interface StreamOutcome {
  readonly status: StreamStatus
  readonly usage: NormalizedUsage
  readonly usageSource: 'upstream' | 'estimated'
  readonly completionId: string | null
  readonly created: number | null
  /** finish_reason per choice index, for the choices that finished. */
  readonly finishReasons: Readonly<Record<number, string>>
  readonly error: { readonly code: string; readonly message: string } | null
}

/** One item of a read stream. `done` and `error` are terminal: nothing follows them. */
export type ChatStreamItem =
  | { readonly type: 'chunk'; readonly chunk: ChatCompletionChunk }
  | { readonly type: 'comment'; readonly text: string }
  /** The stream finished; `estimatedUsage` is set when the upstream reported none. */
  | { readonly type: 'done'; readonly estimatedUsage: NormalizedUsage | null }
  /**
   * The stream broke: `upstream_error` when the upstream sent an error event, `upstream_cut`
   * when it was cut (connection lost, idle timeout, invalid chunk, end before every choice).
   */
  | {
      readonly type: 'error'
      readonly status: 'upstream_error' | 'upstream_cut'
      readonly error: { readonly code: string; readonly message: string }
    }

export const STREAM_CUT_MESSAGE =
  'The model provider stopped streaming before the completion finished. The text received so far was delivered; retry the request to get a complete answer.'

/** The state machine behind the source: SSE events in, typed items out. Pure; no I/O. */
export class ChatChunkReader {
  private id: string | null
  private created: number | null
  private text = ''
  private readonly finishReasons: Record<number, string> = {}
  private readonly choiceIndexes = new Set<number>()
  private usage: NormalizedUsage | null = null
  private status: StreamStatus | null = null
  private error: { code: string; message: string } | null = null

  constructor(private readonly options: ChatChunkOptions) {
    this.id = options.completionId ?? null
    this.created = options.created ?? null
  }

  get terminated(): boolean {
    return this.status !== null
  }

  /** The stream ended normally (`[DONE]`, the upstream's or ours). */
  get completed(): boolean {
    return this.status === 'completed'
  }

  handle(event: SseEvent): ChatStreamItem[] {
    if (this.status !== null) return []
    if (event.kind === 'comment') return [{ type: 'comment', text: event.text }]
    if (event.data === '[DONE]') return [this.complete()]
    let json: unknown
    try {
      json = JSON.parse(event.data)
    } catch {
      return [
        this.fail(
          'upstream_invalid_chunk',
          'The model provider sent a malformed stream chunk. Retry the request.',
        ),
      ]
    }
    if (json !== null && typeof json === 'object' && 'error' in json) {
      const upstreamMessage = readErrorMessage(json)
      this.status = 'upstream_error'
      this.error = {
        code: 'upstream_error',
        message: `The model provider reported an error mid-stream${upstreamMessage ? `: ${upstreamMessage.replace(/[.\s]+$/, '')}` : ''}. Retry the request.`,
      }
      return [{ type: 'error', status: 'upstream_error', error: this.error }]
    }
    const chunk = readChatCompletionChunk(json)
    if (!chunk) {
      return [
        this.fail(
          'upstream_invalid_chunk',
          'The model provider sent a stream chunk that is not a chat.completion.chunk. Retry the request.',
        ),
      ]
    }
    return [{ type: 'chunk', chunk: this.accept(chunk) }]
  }

  /** Records what the chunk says and returns it with the stream's id, created and alias. */
  private accept(chunk: ChatCompletionChunk): ChatCompletionChunk {
    this.id ??= chunk.id ?? `chatcmpl-${crypto.randomUUID().replaceAll('-', '')}`
    this.created ??= chunk.created ?? Math.floor(Date.now() / 1000)
    for (const choice of chunk.choices) {
      this.choiceIndexes.add(choice.index)
      const delta = choice.delta
      if (delta) {
        this.text += (delta.content ?? '') + (delta.refusal ?? '') + (delta.reasoning_content ?? '')
        for (const call of delta.tool_calls ?? [])
          this.text += (call.function?.name ?? '') + (call.function?.arguments ?? '')
      }
      if (choice.finish_reason) this.finishReasons[choice.index] = choice.finish_reason
    }
    if (chunk.usage) this.usage = normalizeUsage(chunk.usage) ?? this.usage
    return {
      ...chunk,
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.options.alias,
    }
  }

  private complete(): ChatStreamItem {
    this.status = 'completed'
    return { type: 'done', estimatedUsage: this.usage === null ? this.outcome().usage : null }
  }

  /** The upstream ended without an error: done if every choice finished, otherwise a cut. */
  finishUpstream(): ChatStreamItem[] {
    if (this.status !== null) return []
    const everyChoiceFinished =
      this.choiceIndexes.size > 0 &&
      [...this.choiceIndexes].every((index) => this.finishReasons[index] !== undefined)
    if (everyChoiceFinished) return [this.complete()]
    return [this.fail('upstream_stream_interrupted', STREAM_CUT_MESSAGE)]
  }

  /** The upstream failed (cut, timeout, bad data): the error item; nothing follows it. */
  fail(code: string, message: string): ChatStreamItem {
    this.status = 'upstream_cut'
    this.error = { code, message }
    return { type: 'error', status: 'upstream_cut', error: this.error }
  }

  /** The caller went away: nothing more is read. */
  cancel(): void {
    if (this.status === null) this.status = 'client_cancelled'
  }

  outcome(): StreamOutcome {
    const usage = this.usage ?? usageFromCounts(this.options.promptTokens(), countTextTokens(this.text))
    return {
      status: this.status ?? 'client_cancelled',
      usage,
      usageSource: this.usage ? 'upstream' : 'estimated',
      completionId: this.id,
      created: this.created,
      finishReasons: { ...this.finishReasons },
      error: this.error,
    }
  }
}

function readErrorMessage(json: object): string | null {
  const error = (json as { error?: unknown }).error
  if (typeof error === 'string') return error
  if (error && typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string') {
    return (error as { message: string }).message
  }
  return null
}

/** The upstream's SSE bytes: its body, or its reader with the bytes already read from it. */
export type UpstreamSse =
  | ReadableStream<Uint8Array>
  | { readonly reader: ReadableStreamDefaultReader<Uint8Array>; readonly first: Uint8Array }

export interface ChatChunkSourceOptions extends ChatChunkOptions {
  /** Longest silence between upstream chunks before the stream counts as cut. */
  readonly idleTimeoutMs: number
  /** Aborts the upstream request (caller gone, upstream stalled). */
  readonly abortUpstream?: () => void
  /** The caller's signal: when it aborts, reading stops and the outcome is client_cancelled. */
  readonly signal?: AbortSignal
}

/** A stream being read: batches of items, one per network read, ending with the terminal item. */
export interface ChatChunkSource extends AsyncIterable<readonly ChatStreamItem[]> {
  /** Settles once the stream is over and its reader has finished with the upstream. */
  readonly outcome: Promise<StreamOutcome>
  /** The usage so far: the upstream's when it reported it, otherwise counted from what was read. */
  progress(): NormalizedUsage
  /** The outcome as it stands (for a consumer about to deliver the terminal item). */
  current(): StreamOutcome
  /** The caller went away: stops reading, aborts the upstream, settles as client_cancelled. */
  cancel(): void
}

class IdleTimeout extends Error {}

/** How long, and for how many reads, the source keeps reading after `[DONE]` (see drain). */
const DRAIN_TIMEOUT_MS = 1000
const DRAIN_MAX_READS = 8

/** Reads `upstream` into typed items (see the file comment). Iterate it once. */
export function readChatChunks(upstream: UpstreamSse, options: ChatChunkSourceOptions): ChatChunkSource {
  const parser = new SseParser()
  const chunks = new ChatChunkReader(options)
  const reader = upstream instanceof ReadableStream ? upstream.getReader() : upstream.reader
  const first = upstream instanceof ReadableStream ? null : upstream.first
  let settled = false
  let resolveOutcome: (outcome: StreamOutcome) => void = () => {}
  const outcome = new Promise<StreamOutcome>((resolve) => {
    resolveOutcome = resolve
  })
  const stopUpstream = () => {
    reader.cancel().catch(() => {})
    options.abortUpstream?.()
  }
  const settle = () => {
    if (settled) return
    settled = true
    options.signal?.removeEventListener('abort', cancel)
    resolveOutcome(chunks.outcome())
  }
  function cancel() {
    if (settled) return
    chunks.cancel()
    settle()
    stopUpstream()
  }
  options.signal?.addEventListener('abort', cancel, { once: true })

  const items = (bytes: Uint8Array) => parser.pushBytes(bytes).flatMap((event) => chunks.handle(event))

  async function* batches(): AsyncGenerator<readonly ChatStreamItem[]> {
    try {
      if (first) {
        const batch = items(first)
        if (batch.length > 0) yield batch
      }
      while (!settled && !chunks.terminated) {
        let result: ReadableStreamReadResult<Uint8Array>
        try {
          result = await readWithin(reader, options.idleTimeoutMs)
        } catch (err) {
          if (settled) return
          stopUpstream()
          yield [
            err instanceof IdleTimeout
              ? chunks.fail(
                  'upstream_timeout',
                  `The model provider sent nothing for ${options.idleTimeoutMs} ms and the stream was closed. Retry the request.`,
                )
              : chunks.fail('upstream_stream_interrupted', STREAM_CUT_MESSAGE),
          ]
          return
        }
        if (settled) return
        if (result.done) {
          yield [...parser.end().flatMap((event) => chunks.handle(event)), ...chunks.finishUpstream()]
          return
        }
        const batch = items(result.value)
        if (batch.length > 0) yield batch
      }
      if (settled) return
      // The stream ended before the upstream did: [DONE] (read what follows so the connection can
      // be reused) or an error (stop the upstream).
      if (chunks.completed) void drain(reader)
      else stopUpstream()
    } catch {
      // The reading itself failed (a consumer that stops early lands in `finally` instead).
      if (settled) return
      stopUpstream()
      if (!chunks.terminated) yield [chunks.fail('upstream_stream_interrupted', STREAM_CUT_MESSAGE)]
    } finally {
      if (!chunks.terminated) {
        // The consumer stopped before the end: nothing more will be read.
        chunks.cancel()
        stopUpstream()
      }
      settle()
    }
  }

  return {
    outcome,
    progress: () => chunks.outcome().usage,
    current: () => chunks.outcome(),
    cancel,
    [Symbol.asyncIterator]: batches,
  }
}

/**
 * Reads what the upstream still sends after `[DONE]` (normally only the end of the body), so
 * its connection can be reused; cancels it if it does not end soon.
 */
async function drain(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  try {
    for (let reads = 0; reads < DRAIN_MAX_READS; reads++) {
      if ((await readWithin(reader, DRAIN_TIMEOUT_MS)).done) return
    }
  } catch {}
  reader.cancel().catch(() => {})
}

async function readWithin(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  timeoutMs: number,
): Promise<ReadableStreamReadResult<Uint8Array>> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new IdleTimeout()), timeoutMs)
  })
  try {
    return await Promise.race([reader.read(), timeout])
  } finally {
    if (timer !== undefined) clearTimeout(timer)
  }
}
