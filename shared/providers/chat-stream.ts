/**
 * Relays an upstream OpenAI-compatible SSE stream to a chat client, chunk by chunk: the typed
 * items of the upstream's stream (chat-chunks.ts, the same reading the agent loop uses) written
 * back as SSE.
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
 * What it reports to the caller (`outcome`): how the stream ended and the usage to bill (see
 * chat-chunks.ts).
 */
import {
  type ChatChunkOptions,
  type ChatChunkSource,
  type ChatStreamItem,
  readChatChunks,
  type StreamOutcome,
  type UpstreamSse,
} from './chat-chunks'
import { type NormalizedUsage, toWireUsage } from './chat-wire'
import { encodeSse, sseComment, sseData } from './sse'

export interface ChatStreamOptions extends ChatChunkOptions {
  /** The client's `stream_options.include_usage`. */
  readonly includeUsage: boolean
}

/** Writes a stream's typed items as the SSE a chat client receives. */
export class ChatSseEncoder {
  private id: string | null = null
  private created: number | null = null

  constructor(private readonly options: Pick<ChatStreamOptions, 'alias' | 'includeUsage'>) {}

  encode(item: ChatStreamItem): string[] {
    switch (item.type) {
      case 'comment':
        return [sseComment(item.text)]
      case 'chunk': {
        const { chunk } = item
        this.id = chunk.id ?? null
        this.created = chunk.created ?? null
        if (chunk.choices.length === 0 && !this.options.includeUsage) return []
        const out: Record<string, unknown> = { ...chunk }
        if (!this.options.includeUsage) delete out.usage
        else if (out.usage === undefined) out.usage = null
        return [sseData(out)]
      }
      case 'done': {
        // A client that asked for include_usage always gets its usage chunk: when the upstream
        // sent none, one with the tokenizer estimate is added.
        const out: string[] = []
        if (this.options.includeUsage && item.estimatedUsage !== null && this.id !== null) {
          out.push(
            sseData({
              id: this.id,
              object: 'chat.completion.chunk',
              created: this.created,
              model: this.options.alias,
              choices: [],
              usage: toWireUsage(item.estimatedUsage),
            }),
          )
        }
        out.push(sseData('[DONE]'))
        return out
      }
      case 'error': {
        const { code, message } = item.error
        return [
          item.status === 'upstream_error'
            ? sseData({ error: { code, message, type: 'upstream_error', param: null } })
            : sseData({ error: { message, type: 'upstream_error', param: null, code } }),
        ]
      }
    }
  }
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

/** Rewritten text the relay holds for a slow client before it stops reading the upstream. */
const MAX_BUFFERED_CHARS = 256 * 1024

/**
 * The client's stream. A read loop takes the upstream's items as they arrive (one batch per
 * network read), writes them as SSE and appends the result to a buffer; each time the client side
 * asks for more it gets everything buffered as one chunk. So a first event goes out alone and at
 * once, while events that arrived together (a provider's burst, or frames already in the socket
 * buffer) cross to the client together instead of one round trip per upstream frame. A client
 * slower than the upstream holds up the read loop once MAX_BUFFERED_CHARS are waiting. Upstream
 * read errors and stalls become the error event; a client cancel stops reading and aborts the
 * upstream request.
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
  const source: ChatChunkSource = readChatChunks(upstream, options)
  const encoder = new ChatSseEncoder(options)
  /** Output not yet handed to the client. */
  const buffered: string[] = []
  let bufferedChars = 0
  /** No more output will be produced (upstream over, or the client gone). */
  let producing = true
  let clientGone = false
  let wakeClient: (() => void) | null = null
  let wakeReader: (() => void) | null = null

  const emit = (lines: string[]) => {
    if (lines.length === 0 || clientGone) return
    const text = lines.join('')
    buffered.push(text)
    bufferedChars += text.length
    wakeClient?.()
  }
  let ending = false
  /** Emits a batch; the stream's last event goes out only after `beforeEnd` is done with the outcome. */
  const deliver = async (items: readonly ChatStreamItem[]) => {
    const lines = items.flatMap((item) => encoder.encode(item))
    const last = items[items.length - 1]
    if ((last?.type === 'done' || last?.type === 'error') && !ending && options.beforeEnd) {
      ending = true
      await options.beforeEnd(source.current()).catch(() => {})
    }
    emit(lines)
  }

  /** Reads the upstream until its stream ends or the client goes away. */
  const readLoop = async () => {
    for await (const items of source) {
      if (clientGone) break
      await deliver(items)
      while (bufferedChars > MAX_BUFFERED_CHARS && !clientGone) {
        wakeClient?.()
        await new Promise<void>((resolve) => {
          wakeReader = resolve
        })
        wakeReader = null
      }
    }
  }
  void readLoop()
    .catch(() => {})
    .finally(() => {
      producing = false
      wakeClient?.()
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
      source.cancel()
      producing = false
      wakeReader?.()
    },
  })
  return { stream, outcome: source.outcome, progress: () => source.progress() }
}
