import { describe, expect, it } from 'vitest'
import { type ChatStreamItem, readChatChunks } from './chat-chunks'
import { chunk, encoder, fullStream, upstream } from './chat-stream.fixtures'

const options = { alias: 'svc-cell', promptTokens: () => 42, idleTimeoutMs: 1000 }

async function batchesOf(source: AsyncIterable<readonly ChatStreamItem[]>): Promise<ChatStreamItem[][]> {
  const batches: ChatStreamItem[][] = []
  for await (const items of source) batches.push([...items])
  return batches
}

describe('readChatChunks', () => {
  it('hands over typed chunks with the alias and one id, one batch per network read, then done', async () => {
    const source = readChatChunks(upstream(fullStream), options)
    const batches = await batchesOf(source)
    expect(batches).toHaveLength(fullStream.length)
    const items = batches.flat()
    const chunks = items.flatMap((item) => (item.type === 'chunk' ? [item.chunk] : []))
    expect(chunks.map((c) => c.model)).toEqual(Array(5).fill('svc-cell'))
    expect(new Set(chunks.map((c) => c.id))).toEqual(new Set(['chatcmpl-up']))
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? null)).toEqual([
      '',
      'Hello',
      ' there',
      null,
      null,
    ])
    expect(items.at(-1)).toEqual({ type: 'done', estimatedUsage: null })
    const outcome = await source.outcome
    expect(outcome).toMatchObject({
      status: 'completed',
      usageSource: 'upstream',
      finishReasons: { 0: 'stop' },
    })
    expect(outcome.usage).toMatchObject({ promptTokens: 11, completionTokens: 4, cachedTokens: 3 })
  })

  it('keeps events that arrived in one read together in one batch', async () => {
    const batches = await batchesOf(readChatChunks(upstream([fullStream.join('')]), options))
    expect(batches).toHaveLength(1)
    expect(batches[0]?.map((item) => item.type)).toEqual([
      'chunk',
      'chunk',
      'chunk',
      'chunk',
      'chunk',
      'done',
    ])
  })

  it('ends a cut stream with one error item and an estimate from the text so far', async () => {
    const source = readChatChunks(upstream(fullStream.slice(0, 3), 'error'), options)
    const items = (await batchesOf(source)).flat()
    expect(items.at(-1)).toMatchObject({
      type: 'error',
      status: 'upstream_cut',
      error: { code: 'upstream_stream_interrupted' },
    })
    expect(items.filter((item) => item.type === 'error' || item.type === 'done')).toHaveLength(1)
    expect(await source.outcome).toMatchObject({ status: 'upstream_cut', usageSource: 'estimated' })
  })

  it('a consumer that stops early stops the upstream and settles as cancelled', async () => {
    let upstreamCancelled = false
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(encoder.encode(chunk({ content: 'word ' })))
      },
      cancel() {
        upstreamCancelled = true
      },
    })
    const source = readChatChunks(endless, options)
    let seen = 0
    for await (const items of source) {
      seen += items.length
      if (seen >= 3) break
    }
    const outcome = await source.outcome
    expect(outcome.status).toBe('client_cancelled')
    expect(outcome.usage.completionTokens).toBeGreaterThan(0)
    expect(upstreamCancelled).toBe(true)
  })
})
