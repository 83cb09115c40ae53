/**
 * Server-sent events, as the WHATWG spec parses them: lines end in CRLF, LF or CR (a CR at the
 * end of one network chunk and an LF at the start of the next are one line break), `:` starts a
 * comment, `data:` lines of one event are joined with `\n`, a blank line dispatches the event.
 * Bytes are decoded as a stream, so a UTF-8 character split across chunks stays whole.
 *
 * One deliberate leniency: at end of input, data lines that were complete (ended by a line
 * break) but not followed by the blank line are still dispatched; a half-received line is not.
 */

export type SseEvent =
  | { readonly kind: 'data'; readonly data: string; readonly event?: string; readonly id?: string }
  | { readonly kind: 'comment'; readonly text: string }

export class SseParser {
  private readonly decoder = new TextDecoder()
  private buffer = ''
  private dataLines: string[] = []
  private eventName: string | undefined
  private lastId: string | undefined

  pushBytes(chunk: Uint8Array): SseEvent[] {
    return this.pushText(this.decoder.decode(chunk, { stream: true }))
  }

  pushText(text: string): SseEvent[] {
    this.buffer += text
    return this.drain(false)
  }

  /** Call once the input ended; returns the events still pending. */
  end(): SseEvent[] {
    this.buffer += this.decoder.decode()
    const events = this.drain(true)
    // The unterminated tail (if any) is a cut line: dropped.
    this.buffer = ''
    if (this.dataLines.length > 0) events.push(this.dispatch())
    return events
  }

  private drain(atEnd: boolean): SseEvent[] {
    const events: SseEvent[] = []
    for (;;) {
      const cr = this.buffer.indexOf('\r')
      const lf = this.buffer.indexOf('\n')
      let breakAt: number
      if (cr === -1 && lf === -1) break
      if (cr === -1) breakAt = lf
      else if (lf === -1) breakAt = cr
      else breakAt = Math.min(cr, lf)
      let breakLength = 1
      if (this.buffer[breakAt] === '\r') {
        if (breakAt + 1 === this.buffer.length && !atEnd) break // may be the first half of CRLF
        if (this.buffer[breakAt + 1] === '\n') breakLength = 2
      }
      const line = this.buffer.slice(0, breakAt)
      this.buffer = this.buffer.slice(breakAt + breakLength)
      const event = this.processLine(line)
      if (event) events.push(event)
    }
    return events
  }

  private processLine(line: string): SseEvent | null {
    if (line === '') return this.dataLines.length > 0 ? this.dispatch() : this.resetEvent()
    if (line.startsWith(':')) return { kind: 'comment', text: stripOneSpace(line.slice(1)) }
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    const value = colon === -1 ? '' : stripOneSpace(line.slice(colon + 1))
    if (field === 'data') this.dataLines.push(value)
    else if (field === 'event') this.eventName = value
    else if (field === 'id' && !value.includes('\u0000')) this.lastId = value
    return null
  }

  private resetEvent(): null {
    this.eventName = undefined
    return null
  }

  private dispatch(): SseEvent {
    const event: SseEvent = {
      kind: 'data',
      data: this.dataLines.join('\n'),
      ...(this.eventName === undefined ? {} : { event: this.eventName }),
      ...(this.lastId === undefined ? {} : { id: this.lastId }),
    }
    this.dataLines = []
    this.eventName = undefined
    return event
  }
}

function stripOneSpace(value: string): string {
  return value.startsWith(' ') ? value.slice(1) : value
}

const encoder = new TextEncoder()

/** One `data:` event; pass `'[DONE]'` for the terminator. */
export function sseData(payload: unknown): string {
  return `data: ${payload === '[DONE]' ? '[DONE]' : JSON.stringify(payload)}\n\n`
}

export function sseComment(text: string): string {
  return `: ${text}\n\n`
}

export function encodeSse(text: string): Uint8Array {
  return encoder.encode(text)
}
