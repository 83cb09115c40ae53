import { describe, expect, it } from 'vitest'
import { SseParser } from './sse'

const bytes = (text: string) => new TextEncoder().encode(text)

describe('SseParser', () => {
  it('reassembles events split at any byte, including inside a multi-byte character', () => {
    const wire = bytes('data: {"a":"héllo"}\n\ndata: [DONE]\n\n')
    for (let cut = 1; cut < wire.length; cut++) {
      const parser = new SseParser()
      const events = [
        ...parser.pushBytes(wire.slice(0, cut)),
        ...parser.pushBytes(wire.slice(cut)),
        ...parser.end(),
      ]
      expect(events).toEqual([
        { kind: 'data', data: '{"a":"héllo"}' },
        { kind: 'data', data: '[DONE]' },
      ])
    }
  })

  it('treats CRLF split across chunks as one line break, and accepts lone CR', () => {
    const parser = new SseParser()
    const first = [...parser.pushText('data: one\r'), ...parser.pushText('\n\r\ndata: two\r\r')]
    // The trailing CR may be half of a CRLF: the event is only certain once input ends.
    expect(first).toEqual([{ kind: 'data', data: 'one' }])
    expect([...first, ...parser.end()]).toEqual([
      { kind: 'data', data: 'one' },
      { kind: 'data', data: 'two' },
    ])
  })

  it('reports comments, joins multi-line data, keeps event names and ignores unknown fields', () => {
    const parser = new SseParser()
    const events = parser.pushText(
      ': keep-alive\n\nevent: delta\nretry: 10\ndata: line1\ndata:line2\nfoo: bar\n\n',
    )
    expect(events).toEqual([
      { kind: 'comment', text: 'keep-alive' },
      { kind: 'data', data: 'line1\nline2', event: 'delta' },
    ])
  })

  it('drops a half-received line at end of input but dispatches complete data lines', () => {
    const cut = new SseParser()
    expect([...cut.pushText('data: {"partial":'), ...cut.end()]).toEqual([])
    const unterminated = new SseParser()
    expect([...unterminated.pushText('data: [DONE]\n'), ...unterminated.end()]).toEqual([
      { kind: 'data', data: '[DONE]' },
    ])
  })
})
