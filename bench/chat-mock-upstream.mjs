// Minimal, fast mock OpenAI-compatible upstream (no artificial delay).
// POST /v1/chat/completions  (and /chat/completions)
//   stream:false -> fixed chat.completion JSON with usage
//   stream:true  -> 20 chat.completion.chunk SSE events + usage chunk + [DONE]
// Usage: node mock-upstream.mjs [port]   (default 18080, binds 127.0.0.1)
import http from 'node:http'

const PORT = Number(process.argv[2] || process.env.MOCK_PORT || 18080)
const CREATED = 1700000000
const MODEL = 'gpt-4o-mini'
const usage = { prompt_tokens: 12, completion_tokens: 20, total_tokens: 32 }

const completionBody = JSON.stringify({
  id: 'chatcmpl-mock123',
  object: 'chat.completion',
  created: CREATED,
  model: MODEL,
  system_fingerprint: 'fp_mock',
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        content: 'Hello! This is a mock response from the local upstream.',
        refusal: null,
      },
      logprobs: null,
      finish_reason: 'stop',
    },
  ],
  usage,
})
const completionBuf = Buffer.from(completionBody)

function chunk(delta, finish = null, extra = {}) {
  return (
    'data: ' +
    JSON.stringify({
      id: 'chatcmpl-mock123',
      object: 'chat.completion.chunk',
      created: CREATED,
      model: MODEL,
      system_fingerprint: 'fp_mock',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...extra,
    }) +
    '\n\n'
  )
}
const words =
  'Hello this is a mock streaming response from the local upstream used for gateway benchmark runs today ok'.split(
    ' ',
  )
const sseParts = []
sseParts.push(chunk({ role: 'assistant', content: '' }))
for (let i = 0; i < 18; i++) sseParts.push(chunk({ content: (i ? ' ' : '') + words[i % words.length] }))
sseParts.push(chunk({}, 'stop')) // 20 content/role/finish chunks
sseParts.push(
  'data: ' +
    JSON.stringify({
      // usage chunk (choices: [])
      id: 'chatcmpl-mock123',
      object: 'chat.completion.chunk',
      created: CREATED,
      model: MODEL,
      system_fingerprint: 'fp_mock',
      choices: [],
      usage,
    }) +
    '\n\n',
)
sseParts.push('data: [DONE]\n\n')
const sseBufs = sseParts.map((s) => Buffer.from(s))

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && (req.url === '/health' || req.url === '/')) {
    res.writeHead(200, { 'content-type': 'text/plain' })
    return res.end('ok')
  }
  if (req.method !== 'POST' || !/\/chat\/completions$/.test(req.url.split('?')[0])) {
    res.writeHead(404, { 'content-type': 'application/json' })
    return res.end('{"error":{"message":"not found"}}')
  }
  const bufs = []
  req.on('data', (d) => bufs.push(d))
  req.on('end', () => {
    let stream = false
    try {
      stream = JSON.parse(Buffer.concat(bufs).toString() || '{}').stream === true
    } catch {}
    if (!stream) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': completionBuf.length })
      return res.end(completionBuf)
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    })
    // Each chunk is a separate write (separate chunked-encoding frame), no delay.
    for (const b of sseBufs) res.write(b)
    res.end()
  })
})
server.keepAliveTimeout = 65000
server.listen(PORT, '127.0.0.1', () => console.log(`mock upstream on http://127.0.0.1:${PORT}`))
