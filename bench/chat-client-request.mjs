// The request both latency clients send (chat-stream-client.mjs, chat-latency-client.mjs): the
// benchmark's chat completion for env MODEL (default gpt-4o-mini), with the headers of env
// HDRS="k: v;;k: v", so the streamed and the sequential measurements send the same thing.
export function chatClientRequest({ stream }) {
  const body = JSON.stringify({
    model: process.env.MODEL || 'gpt-4o-mini',
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    messages: [{ role: 'user', content: 'Say hello' }],
    max_tokens: 32,
  })
  const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
  for (const h of (process.env.HDRS || '').split(';;')) {
    const i = h.indexOf(':')
    if (i > 0) headers[h.slice(0, i).trim().toLowerCase()] = h.slice(i + 1).trim()
  }
  return { body, headers }
}
