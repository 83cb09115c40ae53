/**
 * Test support for the stream readers (chat-chunks.test.ts, chat-stream.test.ts): upstream SSE
 * events as an OpenAI-compatible provider sends them, and upstream bodies that deliver them.
 */

export const encoder = new TextEncoder()

export function chunk(
  delta: Record<string, unknown>,
  finish: string | null = null,
  extra: Record<string, unknown> = {},
) {
  return `data: ${JSON.stringify({
    id: 'chatcmpl-up',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'gpt-4o-mini-2024-07-18',
    system_fingerprint: 'fp_1',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    usage: null,
    ...extra,
  })}\n\n`
}
const usageChunk = `data: ${JSON.stringify({
  id: 'chatcmpl-up',
  object: 'chat.completion.chunk',
  created: 1700000000,
  model: 'gpt-4o-mini-2024-07-18',
  choices: [],
  usage: {
    prompt_tokens: 11,
    completion_tokens: 4,
    total_tokens: 15,
    prompt_tokens_details: { cached_tokens: 3 },
    completion_tokens_details: { reasoning_tokens: 1 },
  },
})}\n\n`
export const done = 'data: [DONE]\n\n'
export const fullStream = [
  chunk({ role: 'assistant', content: '' }),
  chunk({ content: 'Hello' }),
  chunk({ content: ' there' }),
  chunk({}, 'stop'),
  usageChunk,
  done,
]

/** An upstream body that sends `parts` (each one network chunk) then ends, errors, or stays silent. */
export function upstream(
  parts: string[],
  end: 'close' | 'error' | 'hang' = 'close',
): ReadableStream<Uint8Array> {
  let i = 0
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      const part = parts[i++]
      if (part !== undefined) controller.enqueue(encoder.encode(part))
      else if (end === 'close') controller.close()
      else if (end === 'error') controller.error(new Error('connection reset'))
      else return new Promise<void>(() => {})
    },
  })
}
