/**
 * Relays an upstream OpenAI-compatible SSE stream to the client, chunk by chunk.
 *
 * What the relay guarantees to the client:
 * - every chunk goes out as soon as its event is complete (nothing is held back beyond the
 *   bytes of a half-received event);
 * - the same `id` and `created` on every chunk, and `model` = the alias the client asked for;
 * - the usage-only chunk (`choices: []`) only when the client asked for
 *   `stream_options.include_usage` (the provider layer always asks the upstream for it, so the
 *   ledger gets real usage either way); when it asked, every other chunk carries `usage: null`;
 * - an upstream cut (connection lost, idle timeout, invalid chunk, end without `[DONE]` before
 *   every choice finished) ends the stream with `data: {"error":{...}}` and no `[DONE]`.
 *
 * What it reports to the caller (`outcome`): how the stream ended and the usage to bill — the
 * upstream's own usage when it arrived, otherwise an estimate made with the tokenizer (prompt
 * tokens from the request, completion tokens from the text streamed so far).
 */
import {
  type ChatCompletionChunk,
  ChatCompletionChunkSchema,
  type NormalizedUsage,
  normalizeUsage,
  toWireUsage,
  usageFromCounts,
} from './chat-wire'
import { encodeSse, type SseEvent, SseParser, sseComment, sseData } from './sse'
import { countTextTokens } from './tokenizer'

export interface ChatStreamOptions {
  /** The model name the client sees on every chunk. */
  readonly alias: string
  /** The client's `stream_options.include_usage`. */
  readonly includeUsage: boolean
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

export const STREAM_CUT_MESSAGE =
  'The model provider stopped streaming before the completion finished. The text received so far was delivered; retry the request to get a complete answer.'

/** The state machine behind the relay: SSE events in, SSE text out. Pure; no I/O. */
export class ChatStreamRewriter {
  private id: string | null
  private created: number | null
  private text = ''
  private readonly finishReasons: Record<number, string> = {}
  private readonly choiceIndexes = new Set<number>()
  private usage: NormalizedUsage | null = null
  private status: StreamStatus | null = null
  private error: { code: string; message: string } | null = null

  constructor(private readonly options: ChatStreamOptions) {
    this.id = options.completionId ?? null
    this.created = options.created ?? null
  }

  get terminated(): boolean {
    return this.status !== null
  }

  handle(event: SseEvent): string[] {
    if (this.status !== null) return []
    if (event.kind === 'comment') return [sseComment(event.text)]
    if (event.data === '[DONE]') return this.complete()
    let json: unknown
    try {
      json = JSON.parse(event.data)
    } catch {
      return this.fail(
        'upstream_invalid_chunk',
        'The model provider sent a malformed stream chunk. Retry the request.',
      )
    }
    if (json !== null && typeof json === 'object' && 'error' in json) {
      const upstreamMessage = readErrorMessage(json)
      this.status = 'upstream_error'
      this.error = {
        code: 'upstream_error',
        message: `The model provider reported an error mid-stream${upstreamMessage ? `: ${upstreamMessage.replace(/[.\s]+$/, '')}` : ''}. Retry the request.`,
      }
      return [sseData({ error: { ...this.error, type: 'upstream_error', param: null } })]
    }
    const parsed = ChatCompletionChunkSchema.safeParse(json)
    if (!parsed.success) {
      return this.fail(
        'upstream_invalid_chunk',
        'The model provider sent a stream chunk that is not a chat.completion.chunk. Retry the request.',
      )
    }
    return this.rewrite(parsed.data)
  }

  private rewrite(chunk: ChatCompletionChunk): string[] {
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
    const usageOnly = chunk.choices.length === 0
    if (usageOnly && !this.options.includeUsage) return []
    const out: Record<string, unknown> = {
      ...chunk,
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.options.alias,
    }
    if (!this.options.includeUsage) delete out.usage
    else if (out.usage === undefined) out.usage = null
    return [sseData(out)]
  }

  /**
   * Ends the stream normally. A client that asked for include_usage always gets its usage
   * chunk: when the upstream sent none, one with the tokenizer estimate is added.
   */
  private complete(): string[] {
    this.status = 'completed'
    const out: string[] = []
    if (this.options.includeUsage && this.usage === null && this.id !== null) {
      out.push(
        sseData({
          id: this.id,
          object: 'chat.completion.chunk',
          created: this.created,
          model: this.options.alias,
          choices: [],
          usage: toWireUsage(this.outcome().usage),
        }),
      )
    }
    out.push(sseData('[DONE]'))
    return out
  }

  /** The upstream ended without an error. */
  finishUpstream(): string[] {
    if (this.status !== null) return []
    const everyChoiceFinished =
      this.choiceIndexes.size > 0 &&
      [...this.choiceIndexes].every((index) => this.finishReasons[index] !== undefined)
    if (everyChoiceFinished) return this.complete()
    return this.fail('upstream_stream_interrupted', STREAM_CUT_MESSAGE)
  }

  /** The upstream failed (cut, timeout, bad data): emit the error event and stop. */
  fail(code: string, message: string): string[] {
    if (this.status !== null) return []
    this.status = 'upstream_cut'
    this.error = { code, message }
    return [sseData({ error: { message, type: 'upstream_error', param: null, code } })]
  }

  /** The client went away: nothing more is sent. */
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

export interface ChatStreamTransform {
  readonly readable: ReadableStream<Uint8Array>
  readonly writable: WritableStream<Uint8Array>
  /** Settles once, when the stream ended for any reason. */
  readonly outcome: Promise<StreamOutcome>
  /** True once `[DONE]` or an error event was emitted: further upstream bytes are ignored. */
  readonly terminated: () => boolean
  /** Marks the upstream as failed; closing the writable then emits the error event. */
  readonly failUpstream: (code: string, message: string) => void
  /** The client cancelled: settle the outcome without emitting anything. */
  readonly clientCancelled: () => void
}

/** The relay as a TransformStream: pipe upstream SSE bytes in, read client SSE bytes out. */
export function createChatStreamTransform(options: ChatStreamOptions): ChatStreamTransform {
  const parser = new SseParser()
  const rewriter = new ChatStreamRewriter(options)
  let failure: { code: string; message: string } | null = null
  let settled = false
  let resolveOutcome: (outcome: StreamOutcome) => void = () => {}
  const outcome = new Promise<StreamOutcome>((resolve) => {
    resolveOutcome = resolve
  })
  const settle = () => {
    if (settled) return
    settled = true
    resolveOutcome(rewriter.outcome())
  }
  const emit = (controller: TransformStreamDefaultController<Uint8Array>, lines: string[]) => {
    if (lines.length > 0) controller.enqueue(encodeSse(lines.join('')))
  }
  const stream = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      emit(
        controller,
        parser.pushBytes(chunk).flatMap((event) => rewriter.handle(event)),
      )
      if (rewriter.terminated) settle()
    },
    flush(controller) {
      const lines = parser.end().flatMap((event) => rewriter.handle(event))
      lines.push(...(failure ? rewriter.fail(failure.code, failure.message) : rewriter.finishUpstream()))
      emit(controller, lines)
      settle()
    },
  })
  return {
    readable: stream.readable,
    writable: stream.writable,
    outcome,
    terminated: () => rewriter.terminated,
    failUpstream: (code, message) => {
      failure ??= { code, message }
    },
    clientCancelled: () => {
      rewriter.cancel()
      settle()
    },
  }
}

export interface RelayOptions extends ChatStreamOptions {
  /** Longest silence between upstream chunks before the stream counts as cut. */
  readonly idleTimeoutMs: number
  /** Aborts the upstream request (client gone, upstream stalled). */
  readonly abortUpstream?: () => void
  /** The client request's signal: when it aborts, the relay stops and settles as client_cancelled. */
  readonly signal?: AbortSignal
}

class IdleTimeout extends Error {}

/**
 * Pumps `upstream` through the transform. Upstream read errors and stalls become the error
 * event; a client cancel stops reading and aborts the upstream request.
 */
export function relayChatStream(
  upstream: ReadableStream<Uint8Array>,
  options: RelayOptions,
): { stream: ReadableStream<Uint8Array>; outcome: Promise<StreamOutcome> } {
  const transform = createChatStreamTransform(options)
  const reader = upstream.getReader()
  const writer = transform.writable.getWriter()
  let clientGone = false
  const stopUpstream = () => {
    reader.cancel().catch(() => {})
    options.abortUpstream?.()
  }
  const onClientGone = () => {
    if (clientGone) return
    clientGone = true
    transform.clientCancelled()
    stopUpstream()
    writer.abort(new Error('client cancelled')).catch(() => {})
  }
  writer.closed.catch(onClientGone)
  options.signal?.addEventListener('abort', onClientGone, { once: true })

  const pump = async () => {
    for (;;) {
      let result: ReadableStreamReadResult<Uint8Array>
      try {
        result = await readWithin(reader, options.idleTimeoutMs)
      } catch (err) {
        if (clientGone || options.signal?.aborted) return
        const stalled = err instanceof IdleTimeout
        const code = stalled ? 'upstream_timeout' : 'upstream_stream_interrupted'
        const message = stalled
          ? `The model provider sent nothing for ${options.idleTimeoutMs} ms and the stream was closed. Retry the request.`
          : STREAM_CUT_MESSAGE
        transform.failUpstream(code, message)
        stopUpstream()
        break
      }
      if (result.done || clientGone) break
      try {
        await writer.write(result.value)
      } catch {
        return
      }
      if (transform.terminated()) {
        stopUpstream()
        break
      }
    }
    options.signal?.removeEventListener('abort', onClientGone)
    if (clientGone) return
    await writer.close().catch(() => {})
  }
  void pump()
  return { stream: transform.readable, outcome: transform.outcome }
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
