import { describe, expect, it } from 'vitest'
import { relayChatStream } from './chat-stream'
import { chunk, done, encoder, fullStream, upstream } from './chat-stream.fixtures'
import { SseParser } from './sse'
import { countTextTokens } from './tokenizer'

async function readEvents(stream: ReadableStream<Uint8Array>): Promise<string[]> {
  const parser = new SseParser()
  const events: string[] = []
  const reader = stream.getReader()
  for (;;) {
    const { done: finished, value } = await reader.read()
    if (finished) break
    for (const e of parser.pushBytes(value)) if (e.kind === 'data') events.push(e.data)
  }
  for (const e of parser.end()) if (e.kind === 'data') events.push(e.data)
  return events
}

const options = { alias: 'svc-cell', promptTokens: () => 42, idleTimeoutMs: 1000 }

describe('relayChatStream', () => {
  it('rewrites model to the alias, keeps id/created, and strips the usage chunk when the client did not ask', async () => {
    const relay = relayChatStream(upstream(fullStream), { ...options, includeUsage: false })
    const events = await readEvents(relay.stream)
    expect(events.at(-1)).toBe('[DONE]')
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e))
    expect(chunks).toHaveLength(4)
    for (const c of chunks) {
      expect(c).toMatchObject({
        id: 'chatcmpl-up',
        created: 1700000000,
        model: 'svc-cell',
        object: 'chat.completion.chunk',
      })
      expect(c).not.toHaveProperty('usage')
      expect(c.system_fingerprint).toBe('fp_1')
    }
    const outcome = await relay.outcome
    expect(outcome).toMatchObject({
      status: 'completed',
      usageSource: 'upstream',
      finishReasons: { 0: 'stop' },
    })
    expect(outcome.usage).toEqual({
      promptTokens: 11,
      completionTokens: 4,
      totalTokens: 15,
      cachedTokens: 3,
      reasoningTokens: 1,
    })
  })

  it('forwards the usage chunk, and usage: null on the others, when the client asked for include_usage', async () => {
    const relay = relayChatStream(upstream(fullStream), { ...options, includeUsage: true })
    const chunks = (await readEvents(relay.stream)).slice(0, -1).map((e) => JSON.parse(e))
    expect(chunks).toHaveLength(5)
    expect(chunks.slice(0, 4).every((c) => c.usage === null)).toBe(true)
    expect(chunks[4]).toMatchObject({ choices: [], model: 'svc-cell', usage: { total_tokens: 15 } })
  })

  it('adds an estimated usage chunk for a client that asked for usage when the upstream sent none', async () => {
    const relay = relayChatStream(upstream([...fullStream.slice(0, 4), done]), {
      ...options,
      includeUsage: true,
    })
    const events = await readEvents(relay.stream)
    expect(events.at(-1)).toBe('[DONE]')
    const usage = JSON.parse(events.at(-2) ?? '{}')
    expect(usage).toMatchObject({ id: 'chatcmpl-up', choices: [], model: 'svc-cell' })
    expect(usage.usage).toMatchObject({
      prompt_tokens: 42,
      completion_tokens: countTextTokens('Hello there'),
    })
    expect((await relay.outcome).usageSource).toBe('estimated')
  })

  it('handles events split across network chunks at arbitrary points', async () => {
    const wire = fullStream.join('')
    const parts: string[] = []
    for (let i = 0; i < wire.length; i += 7) parts.push(wire.slice(i, i + 7))
    const relay = relayChatStream(upstream(parts), { ...options, includeUsage: false })
    const chunks = (await readEvents(relay.stream)).slice(0, -1).map((e) => JSON.parse(e))
    expect(chunks.map((c) => c.choices[0].delta.content ?? '').join('')).toBe('Hello there')
  })

  it('passes each chunk on before the next one arrives (no buffering)', async () => {
    let release: () => void = () => {}
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    let step = 0
    const slow = new ReadableStream<Uint8Array>({
      async pull(controller) {
        step++
        if (step === 1) controller.enqueue(encoder.encode(chunk({ role: 'assistant', content: 'first' })))
        else if (step === 2) {
          await gate
          controller.enqueue(encoder.encode(chunk({}, 'stop') + done))
        } else controller.close()
      },
    })
    const relay = relayChatStream(slow, { ...options, includeUsage: false })
    const reader = relay.stream.getReader()
    const first = await reader.read()
    expect(new TextDecoder().decode(first.value)).toContain('"first"')
    release()
    await reader.cancel()
  })

  it('on an upstream cut emits one error event, no [DONE], and estimates usage from the text so far', async () => {
    const relay = relayChatStream(upstream(fullStream.slice(0, 3), 'error'), {
      ...options,
      includeUsage: true,
    })
    const events = await readEvents(relay.stream)
    expect(events).not.toContain('[DONE]')
    const last = JSON.parse(events.at(-1) ?? '{}')
    expect(last.error).toMatchObject({ type: 'upstream_error', code: 'upstream_stream_interrupted' })
    expect(last.error.message).toMatch(/stopped streaming/)
    const outcome = await relay.outcome
    expect(outcome.status).toBe('upstream_cut')
    expect(outcome.usageSource).toBe('estimated')
    expect(outcome.usage.promptTokens).toBe(42)
    expect(outcome.usage.completionTokens).toBe(countTextTokens('Hello there'))
  })

  it('treats an upstream that closes without finishing as a cut', async () => {
    const relay = relayChatStream(upstream(fullStream.slice(0, 2)), { ...options, includeUsage: false })
    const events = await readEvents(relay.stream)
    expect(JSON.parse(events.at(-1) ?? '{}').error.code).toBe('upstream_stream_interrupted')
    expect((await relay.outcome).status).toBe('upstream_cut')
  })

  it('ends a stalled upstream after the idle timeout', async () => {
    const relay = relayChatStream(upstream(fullStream.slice(0, 2), 'hang'), {
      ...options,
      includeUsage: false,
      idleTimeoutMs: 50,
    })
    const events = await readEvents(relay.stream)
    expect(JSON.parse(events.at(-1) ?? '{}').error.code).toBe('upstream_timeout')
  })

  it('closes the stream itself when the upstream finished every choice but forgot [DONE]', async () => {
    const relay = relayChatStream(upstream(fullStream.slice(0, 5)), { ...options, includeUsage: false })
    expect((await readEvents(relay.stream)).at(-1)).toBe('[DONE]')
    expect((await relay.outcome).status).toBe('completed')
  })

  it('relays an error event sent by the upstream and stops', async () => {
    const errorEvent = `data: ${JSON.stringify({ error: { message: 'overloaded', type: 'server_error' } })}\n\n`
    const relay = relayChatStream(upstream([fullStream[0] ?? '', errorEvent, chunk({ content: 'late' })]), {
      ...options,
      includeUsage: false,
    })
    const events = await readEvents(relay.stream)
    expect(events).toHaveLength(2)
    expect(JSON.parse(events[1] ?? '{}').error.message).toContain('overloaded')
    expect((await relay.outcome).status).toBe('upstream_error')
  })

  it('on client cancel stops reading, aborts the upstream and settles with an estimate', async () => {
    let upstreamCancelled = false
    let aborted = false
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(encoder.encode(chunk({ content: 'word ' })))
      },
      cancel() {
        upstreamCancelled = true
      },
    })
    const relay = relayChatStream(endless, {
      ...options,
      includeUsage: false,
      abortUpstream: () => {
        aborted = true
      },
    })
    const reader = relay.stream.getReader()
    await reader.read()
    await reader.read()
    await reader.cancel()
    const outcome = await relay.outcome
    expect(outcome.status).toBe('client_cancelled')
    expect(outcome.usageSource).toBe('estimated')
    expect(outcome.usage.completionTokens).toBeGreaterThan(0)
    expect(upstreamCancelled).toBe(true)
    expect(aborted).toBe(true)
  })

  it('hands events that arrived while the client was busy over as one chunk', async () => {
    const relay = relayChatStream(upstream(fullStream), { ...options, includeUsage: true })
    await relay.outcome
    const reader = relay.stream.getReader()
    const chunks: string[] = []
    for (;;) {
      const { done: finished, value } = await reader.read()
      if (finished) break
      chunks.push(new TextDecoder().decode(value))
    }
    expect(chunks.length).toBeLessThanOrEqual(2)
    const events = chunks.join('').match(/^data: /gm) ?? []
    expect(events).toHaveLength(fullStream.length)
    expect(chunks.join('').endsWith('data: [DONE]\n\n')).toBe(true)
  })

  it('stops reading the upstream while a slow client has a full buffer waiting', async () => {
    // An upstream read only when the relay asks (high-water mark 0): `pulls` is what it read.
    const frame = encoder.encode(chunk({ content: 'x'.repeat(1000) }))
    const supply = 1_000 // frames: about four times what the relay may hold for a slow client
    let pulls = 0
    const pulled: { atLeast: number; resolve: () => void }[] = []
    const upstream = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          pulls++
          if (pulls > supply) controller.close()
          else controller.enqueue(frame)
          for (const w of pulled.filter((w) => pulls >= w.atLeast)) w.resolve()
        },
      },
      { highWaterMark: 0 },
    )
    const pulledAtLeast = (atLeast: number) =>
      new Promise<void>((resolve) => {
        if (pulls >= atLeast) resolve()
        else pulled.push({ atLeast, resolve })
      })
    // The relay works in promise jobs only: once a turn of the event loop passes without a pull,
    // it has stopped asking (a relay without backpressure reads all `supply` frames first).
    const pullsOnceSettled = async () => {
      for (let before = -1; before !== pulls; ) {
        before = pulls
        await new Promise((resolve) => setTimeout(resolve, 0))
      }
      return pulls
    }

    const relay = relayChatStream(upstream, { ...options, includeUsage: false })
    const reader = relay.stream.getReader()
    const first = await reader.read() // the first event, handed over as soon as it was rewritten
    const eventBytes = first.value!.byteLength
    const held = await pullsOnceSettled()
    // It read until more than 256 KiB of events waited for the client, and one more at most.
    const limit = (256 * 1024) / eventBytes
    expect(held).toBeGreaterThan(limit)
    expect(held).toBeLessThanOrEqual(limit + 3)
    // The client reads on: what waited reaches it (after an event the stream may have queued,
    // as one chunk), and the relay reads the upstream again.
    let received = 0
    for (let reads = 0; received <= 256 * 1024; reads++) {
      expect(reads).toBeLessThan(3)
      received += (await reader.read()).value!.byteLength
    }
    await pulledAtLeast(held + 1)
    await reader.cancel()
    expect((await relay.outcome).status).toBe('client_cancelled')
  })
})
