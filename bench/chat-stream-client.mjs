// Streaming latency client: sequential (concurrency 1) keep-alive POSTs with stream:true.
// From the team's peer-bench harness; the model is per target (env MODEL, default gpt-4o-mini).
// Measures time to response headers, time to first body byte (first SSE event) and total time.
// Usage: node stream-client.mjs <url> <n> [warmup] ; env HDRS="k: v;;k: v"
// Prints: RESULT {json}
import http from 'node:http'
import { chatClientRequest } from './chat-client-request.mjs'

const [url, nArg, warmArg] = process.argv.slice(2)
const N = Number(nArg || 300),
  WARM = Number(warmArg || 20)
const u = new URL(url)
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
const { body, headers } = chatClientRequest({ stream: true })

function one() {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint()
    let tHdr,
      tFirst,
      text = ''
    const req = http.request(
      { host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers, agent },
      (res) => {
        tHdr = process.hrtime.bigint()
        res.setEncoding('utf8')
        res.on('data', (d) => {
          if (tFirst === undefined) tFirst = process.hrtime.bigint()
          text += d
        })
        res.on('end', () => {
          const tEnd = process.hrtime.bigint()
          const events = (text.match(/^data: /gm) || []).length
          resolve({
            status: res.statusCode,
            ok: res.statusCode === 200 && text.includes('data: [DONE]'),
            events,
            hdr: Number(tHdr - t0) / 1e6,
            ttfb: Number((tFirst ?? tEnd) - t0) / 1e6,
            total: Number(tEnd - t0) / 1e6,
          })
        })
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}
const pct = (a, p) => {
  const s = [...a].sort((x, y) => x - y)
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]
}

for (let i = 0; i < WARM; i++) await one()
const r = []
const tStart = process.hrtime.bigint()
for (let i = 0; i < N; i++) r.push(await one())
const wall = Number(process.hrtime.bigint() - tStart) / 1e9
const bad = r.filter((x) => !x.ok).length
const ev = r.map((x) => x.events)
const out = {
  requests: N,
  failed: bad,
  events_min: Math.min(...ev),
  events_max: Math.max(...ev),
  wall_s: +wall.toFixed(3),
}
for (const k of ['hdr', 'ttfb', 'total']) {
  out[`${k}_p50_ms`] = +pct(
    r.map((x) => x[k]),
    50,
  ).toFixed(4)
  out[`${k}_p99_ms`] = +pct(
    r.map((x) => x[k]),
    99,
  ).toFixed(4)
}
console.log('RESULT ' + JSON.stringify(out))
agent.destroy()
