// Sequential latency client: one keep-alive connection, non-streaming POSTs back to back, each
// request's own time (process.hrtime) with no correction. wrk's latency figures are corrected for
// coordinated omission (wrk 4 `stats_correct`: every response slower than twice the mean interval
// adds synthetic samples for the requests an open-loop client would have sent meanwhile), so one
// 100 ms pause among 10,000 requests of 0.5 ms becomes ~200 samples and lifts wrk's p99 to tens of
// milliseconds. Both views are reported: wrk's says what a steady stream of users would see around
// a pause, this one what each request took.
// Usage: node chat-latency-client.mjs <url> <n> [warmup] ; env HDRS="k: v;;k: v" MODEL=name
// Prints: RESULT {json}
import http from 'node:http'
import { chatClientRequest } from './chat-client-request.mjs'

const [url, nArg, warmArg] = process.argv.slice(2)
const N = Number(nArg || 3000),
  WARM = Number(warmArg || 50)
const u = new URL(url)
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
const { body, headers } = chatClientRequest({ stream: false })

function one() {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint()
    const req = http.request(
      { host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers, agent },
      (res) => {
        res.resume()
        res.on('end', () =>
          resolve({ ok: res.statusCode === 200, ms: Number(process.hrtime.bigint() - t0) / 1e6 }),
        )
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}
const pct = (s, p) => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]

for (let i = 0; i < WARM; i++) await one()
const r = []
const tStart = process.hrtime.bigint()
for (let i = 0; i < N; i++) r.push(await one())
const wall = Number(process.hrtime.bigint() - tStart) / 1e9
const ms = r.map((x) => x.ms).sort((a, b) => a - b)
const out = {
  requests: N,
  failed: r.filter((x) => !x.ok).length,
  wall_s: +wall.toFixed(3),
  rps: +(N / wall).toFixed(1),
  mean_ms: +(ms.reduce((a, b) => a + b, 0) / N).toFixed(4),
  p50_ms: +pct(ms, 50).toFixed(4),
  p99_ms: +pct(ms, 99).toFixed(4),
  p999_ms: +pct(ms, 99.9).toFixed(4),
  max_ms: +ms[ms.length - 1].toFixed(4),
  over_10ms: ms.filter((x) => x > 10).length,
}
console.log('RESULT ' + JSON.stringify(out))
agent.destroy()
