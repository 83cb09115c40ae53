/**
 * The embeddings fake speaks OpenAI's wire format with vectors of its own: what the product's
 * client is tested against (functions/knowledge/src/retrieval/embeddings.test.ts) has to be right
 * here first.
 */
import { describe, expect, it } from 'vitest'
import { createOpenAiEmbeddingsFake, fakeEmbedding } from './openai-embeddings.ts'

const fake = createOpenAiEmbeddingsFake()
const embed = (body: Record<string, unknown>) =>
  fake.fetch('https://api.openai.example/v1/embeddings', {
    method: 'POST',
    headers: { authorization: `Bearer ${fake.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
const cosine = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * b[i]!, 0)

describe('the OpenAI embeddings fake', () => {
  it('answers a list in input order; base64 is the same vectors as little-endian float32', async () => {
    const input = ['kubernetes autoscaling', 'lunch at noon']
    const floats = (await (await embed({ model: 'text-embedding-3-small', input })).json()) as {
      data: { index: number; embedding: number[] }[]
      usage: { prompt_tokens: number }
    }
    expect(floats.data.map((d) => d.index)).toEqual([0, 1])
    expect(floats.data[0]!.embedding).toHaveLength(1536)
    expect(floats.usage.prompt_tokens).toBeGreaterThan(0)
    const encoded = (await (
      await embed({ model: 'text-embedding-3-small', input, encoding_format: 'base64' })
    ).json()) as { data: { embedding: string }[] }
    const bytes = Buffer.from(encoded.data[1]!.embedding, 'base64')
    const decoded = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4))
    expect(decoded).toEqual(floats.data[1]!.embedding)
  })

  it('dimensions shortens text-embedding-3 vectors to unit length; ada refuses it; unknown models are 404', async () => {
    const short = (await (
      await embed({ model: 'text-embedding-3-large', input: 'x y', dimensions: 64 })
    ).json()) as { data: { embedding: number[] }[] }
    const v = short.data[0]!.embedding
    expect(v).toHaveLength(64)
    expect(Math.hypot(...v)).toBeCloseTo(1, 6)
    const ada = await embed({ model: 'text-embedding-ada-002', input: 'x', dimensions: 64 })
    expect(ada.status).toBe(400)
    expect(await ada.json()).toMatchObject({ error: { param: 'dimensions' } })
    expect((await embed({ model: 'text-embedding-3-small', input: 'x', dimensions: 4096 })).status).toBe(400)
    const unknown = await embed({ model: 'svc-test-embedding', input: 'x' })
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toMatchObject({ error: { code: 'model_not_found' } })
  })

  it('texts sharing words and parts of words are closer than unrelated ones', () => {
    const v = (t: string) => fakeEmbedding(t, 'text-embedding-3-small', 256)
    const doc = v('Runbook step 3 restarts the payment service')
    expect(cosine(doc, v('runbok restarts service'))).toBeGreaterThan(cosine(doc, v('cafeteria lunch menu')))
    expect(v('same text')).toEqual(v('same text'))
  })
})
