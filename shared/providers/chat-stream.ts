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
  type NormalizedUsage,
  normalizeUsage,
  toWireUsage,
  usageFromCounts,
} from './chat-wire'
import { encodeSse, type SseEvent, SseParser, sseComment, sseData } from './sse'
import { countTextTokens } from './tokenizer'
import { readChatCompletionChunk } from './wire-check'

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

  /** The stream ended with `[DONE]` (the upstream's or ours). */
  get completed(): boolean {
    return this.status === 'completed'
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
    const chunk = readChatCompletionChunk(json)
    if (!chunk) {
      return this.fail(
        'upstream_invalid_chunk',
        'The model provider sent a stream chunk that is not a chat.completion.chunk. Retry the request.',
      )
    }
    return this.rewrite(chunk)
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

export interface RelayOptions extends ChatStreamOptions {
  /** Longest silence between upstream chunks before the stream counts as cut. */
  readonly idleTimeoutMs: number
  /** Aborts the upstream request (client gone, upstream stalled). */
  readonly abortUpstream?: () => void
  /** The client request's signal: when it aborts, the relay stops and settles as client_cancelled. */
  readonly signal?: AbortSignal
  /**
   * Called when the relay is about to send the stream's last event (`[DONE]` or the error event),
   * with the outcome; that event waits until the returned promise settles. The chat worker records
   * the usage here, so a client that saw the stream end knows its usage is stored.
   */
  readonly beforeEnd?: (outcome: StreamOutcome) => Promise<unknown>
}

/** The upstream's SSE bytes: its body, or its reader with the bytes already read from it. */
export type UpstreamSse =
  | ReadableStream<Uint8Array>
  | { readonly reader: ReadableStreamDefaultReader<Uint8Array>; readonly first: Uint8Array }

class IdleTimeout extends Error {}

/** How long, and for how many reads, the relay keeps reading after `[DONE]` (see drain). */
const DRAIN_TIMEOUT_MS = 1000
const DRAIN_MAX_READS = 8

/** Rewritten text the relay holds for a slow client before it stops reading the upstream. */
const MAX_BUFFERED_CHARS = 256 * 1024

/**
 * The client's stream. A read loop takes the upstream's bytes as they arrive, rewrites every
 * complete event and appends the result to a buffer; each time the client side asks for more it
 * gets everything buffered as one chunk. So a first event goes out alone and at once, while
 * events that arrived together (a provider's burst, or frames already in the socket buffer) cross
 * to the client together instead of one round trip per upstream frame. A client slower than the
 * upstream holds up the read loop once MAX_BUFFERED_CHARS are waiting. Upstream read errors and
 * stalls become the error event; a client cancel stops reading and aborts the upstream request.
 */
export function relayChatStream(
  upstream: UpstreamSse,
  options: RelayOptions,
): {
  stream: ReadableStream<Uint8Array>
  outcome: Promise<StreamOutcome>
  /** The usage so far: the upstream's when it reported it, otherwise counted from what was relayed. */
  progress: () => NormalizedUsage
} {
  const parser = new SseParser()
  const rewriter = new ChatStreamRewriter(options)
  const reader = upstream instanceof ReadableStream ? upstream.getReader() : upstream.reader
  const first = upstream instanceof ReadableStream ? null : upstream.first
  /** Output not yet handed to the client. */
  const buffered: string[] = []
  let bufferedChars = 0
  /** No more output will be produced (upstream over, or the client gone). */
  let producing = true
  let settled = false
  let clientGone = false
  let wakeClient: (() => void) | null = null
  let wakeReader: (() => void) | null = null
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
    producing = false
    options.signal?.removeEventListener('abort', onClientGone)
    resolveOutcome(rewriter.outcome())
    wakeClient?.()
    wakeReader?.()
  }
  function onClientGone() {
    if (settled) return
    rewriter.cancel()
    settle()
    stopUpstream()
  }
  options.signal?.addEventListener('abort', onClientGone, { once: true })

  const emit = (lines: string[]) => {
    if (lines.length === 0 || settled) return
    const text = lines.join('')
    buffered.push(text)
    bufferedChars += text.length
    wakeClient?.()
  }
  const rewrite = (bytes: Uint8Array) => parser.pushBytes(bytes).flatMap((event) => rewriter.handle(event))
  let ending = false
  /** Emits lines; those that end the stream go out only after `beforeEnd` is done with the outcome. */
  const deliver = async (lines: string[]) => {
    if (rewriter.terminated && !ending && options.beforeEnd) {
      ending = true
      await options.beforeEnd(rewriter.outcome()).catch(() => {})
    }
    emit(lines)
  }

  /** Reads the upstream until it ends, the relay terminates the stream, or the client goes away. */
  const readLoop = async () => {
    if (first) await deliver(rewrite(first))
    while (!settled && !rewriter.terminated) {
      if (bufferedChars > MAX_BUFFERED_CHARS) {
        wakeClient?.()
        await new Promise<void>((resolve) => {
          wakeReader = resolve
        })
        wakeReader = null
        continue
      }
      let result: ReadableStreamReadResult<Uint8Array>
      try {
        result = await readWithin(reader, options.idleTimeoutMs)
      } catch (err) {
        if (settled) return
        stopUpstream()
        await deliver(
          err instanceof IdleTimeout
            ? rewriter.fail(
                'upstream_timeout',
                `The model provider sent nothing for ${options.idleTimeoutMs} ms and the stream was closed. Retry the request.`,
              )
            : rewriter.fail('upstream_stream_interrupted', STREAM_CUT_MESSAGE),
        )
        return settle()
      }
      if (settled) return
      if (result.done) {
        const lines = parser.end().flatMap((event) => rewriter.handle(event))
        lines.push(...rewriter.finishUpstream())
        await deliver(lines)
        return settle()
      }
      await deliver(rewrite(result.value))
    }
    if (settled) return
    // The stream ended before the upstream did: [DONE] (read what follows so the connection can
    // be reused) or an error event (stop the upstream).
    if (rewriter.completed) void drain(reader)
    else stopUpstream()
    settle()
  }
  void readLoop().catch(async () => {
    if (settled) return
    stopUpstream()
    await deliver(rewriter.fail('upstream_stream_interrupted', STREAM_CUT_MESSAGE))
    settle()
  })

  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (buffered.length === 0 && producing) {
        await new Promise<void>((resolve) => {
          wakeClient = resolve
        })
        wakeClient = null
      }
      if (clientGone) return
      if (buffered.length > 0) {
        const text = buffered.length === 1 ? (buffered[0] as string) : buffered.join('')
        buffered.length = 0
        bufferedChars = 0
        wakeReader?.()
        controller.enqueue(encodeSse(text))
      }
      if (!producing && buffered.length === 0) controller.close()
    },
    cancel() {
      clientGone = true
      onClientGone()
    },
  })
  return { stream, outcome, progress: () => rewriter.outcome().usage }
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
