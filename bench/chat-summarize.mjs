// Summarize bench/chat-bench.sh output: medians over rounds, overhead vs "direct" and ratios,
// then the chat-completions targets (svc against portkey). From the team's peer-bench harness.
// Usage: node chat-summarize.mjs results/chat-XXXX.jsonl [baseline=direct]
import fs from 'node:fs'

const [file, base = 'direct'] = process.argv.slice(2)
const rows = fs
  .readFileSync(file, 'utf8')
  .trim()
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l))
const med = (a) => {
  const s = [...a].sort((x, y) => x - y),
    m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}
const targets = [...new Set(rows.map((r) => r.target))]
const get = (t, test, k) => {
  const v = rows
    .filter((r) => r.target === t && r.test === test)
    .map((r) => r[k])
    .filter((x) => x !== undefined)
  return v.length ? med(v) : NaN
}
const all = (t, test, k) => rows.filter((r) => r.target === t && r.test === test).map((r) => r[k])
const metrics = [
  ['c1', 'p50_ms', 'non-stream c=1 p50 (ms)', 'lat'],
  ['c1', 'p99_ms', 'non-stream c=1 p99 (ms, wrk: corrected for coordinated omission)', 'lat'],
  ['seq', 'p50_ms', 'non-stream sequential p50 (ms)', 'lat'],
  ['seq', 'p99_ms', 'non-stream sequential p99 (ms, each request as timed)', 'lat'],
  ['seq', 'p999_ms', 'non-stream sequential p99.9 (ms)', 'lat'],
  ['seq', 'max_ms', 'non-stream sequential max (ms)', 'lat'],
  ['c32', 'rps', 'non-stream c=32 req/s', 'thr'],
  ['c32', 'p50_ms', 'non-stream c=32 p50 (ms)', 'lat'],
  ['c32', 'p99_ms', 'non-stream c=32 p99 (ms)', 'lat'],
  ['stream', 'ttfb_p50_ms', 'stream c=1 TTFB p50 (ms)', 'lat'],
  ['stream', 'ttfb_p99_ms', 'stream c=1 TTFB p99 (ms)', 'lat'],
  ['stream', 'total_p50_ms', 'stream c=1 total p50 (ms)', 'lat'],
  ['stream', 'total_p99_ms', 'stream c=1 total p99 (ms)', 'lat'],
]
const f = (x, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a')
console.log(`Medians of ${Math.max(...rows.map((r) => r.round))} rounds (${file})\n`)
console.log('| metric | ' + targets.join(' | ') + ' |')
console.log('|---|' + targets.map(() => '---|').join(''))
for (const [test, k, label, kind] of metrics) {
  console.log(
    `| ${label} | ` + targets.map((t) => f(get(t, test, k), kind === 'thr' ? 0 : 3)).join(' | ') + ' |',
  )
}
// CPU per request during c=32
console.log(
  '| gateway CPU per req @c32 (µs) | ' +
    targets
      .map((t) => {
        const v = rows
          .filter((r) => r.target === t && r.test === 'c32')
          .map((r) => (r.gw_cpu_s * 1e6) / r.requests)
        return t === base ? '-' : f(med(v), 0)
      })
      .join(' | ') +
    ' |',
)
console.log(
  '| of which workerd (µs) | ' +
    targets
      .map((t) => {
        const v = rows
          .filter((r) => r.target === t && r.test === 'c32' && r.gw_workerd_cpu_s !== undefined)
          .map((r) => (r.gw_workerd_cpu_s * 1e6) / r.requests)
        return t === base || v.length === 0 ? '-' : f(med(v), 0)
      })
      .join(' | ') +
    ' |',
)
console.log(
  '| upstream CPU per req @c32 (µs) | ' +
    targets
      .map((t) => {
        const v = rows
          .filter((r) => r.target === t && r.test === 'c32')
          .map((r) => (r.up_cpu_s * 1e6) / r.requests)
        return f(med(v), 0)
      })
      .join(' | ') +
    ' |',
)

console.log(`\nOverhead vs ${base} (median gateway − median ${base}; ratio = gateway/${base})\n`)
const others = targets.filter((t) => t !== base)
console.log('| metric | ' + others.map((t) => `${t} overhead | ${t} ratio`).join(' | ') + ' |')
console.log('|---|' + others.map(() => '---|---|').join(''))
for (const [test, k, label, kind] of metrics) {
  const b = get(base, test, k)
  console.log(
    `| ${label} | ` +
      others
        .map((t) => {
          const g = get(t, test, k)
          return kind === 'thr' ? `${f(g - b, 0)} | ${f(g / b, 3)}×` : `${f(g - b, 3)} ms | ${f(g / b, 2)}×`
        })
        .join(' | ') +
      ' |',
  )
}
console.log('\nPer-round values (for spread):')
for (const t of targets) {
  console.log(
    `  ${t}: c1 p50 [${all(t, 'c1', 'p50_ms')
      .map((x) => f(x))
      .join(', ')}] c1 n [${all(t, 'c1', 'requests')}] ` +
      `c32 rps [${all(t, 'c32', 'rps')
        .map((x) => f(x, 0))
        .join(', ')}] ttfb p50 [${all(t, 'stream', 'ttfb_p50_ms')
        .map((x) => f(x))
        .join(', ')}] ` +
      `non2xx [${all(t, 'c1', 'non2xx').concat(all(t, 'c32', 'non2xx'))}] sockerr [${all(t, 'c1', 'sock_err').concat(all(t, 'c32', 'sock_err'))}] stream failed [${all(t, 'stream', 'failed')}] events [${all(t, 'stream', 'events_min')}-${all(t, 'stream', 'events_max')}] ` +
      `max foreign cores [${['c1', 'c32', 'stream'].map((x) => f(Math.max(...all(t, x, 'foreign_cores')), 2)).join('/')}] tries>1: ${rows.filter((r) => r.target === t && r.tries > 1).length}`,
  )
}

if (targets.includes('svc') && targets.includes('portkey')) {
  const over = (t, test, k) => get(t, test, k) - get(base, test, k)
  const cpu = (t, k = 'gw_cpu_s') =>
    med(
      rows
        .filter((r) => r.target === t && r.test === 'c32' && r[k] !== undefined)
        .map((r) => (r[k] * 1e6) / r.requests),
    )
  const checks = [
    [
      "c=1 p50 overhead over direct below Portkey's",
      `${f(over('svc', 'c1', 'p50_ms'))} ms vs ${f(over('portkey', 'c1', 'p50_ms'))} ms`,
      over('svc', 'c1', 'p50_ms') < over('portkey', 'c1', 'p50_ms'),
    ],
    [
      "c=32 req/s at least 3x Portkey's",
      `${f(get('svc', 'c32', 'rps'), 0)} vs 3 × ${f(get('portkey', 'c32', 'rps'), 0)}`,
      get('svc', 'c32', 'rps') >= 3 * get('portkey', 'c32', 'rps'),
    ],
    [
      'CPU per request under 300 µs',
      `${f(cpu('svc'), 0)} µs (workerd ${f(cpu('svc', 'gw_workerd_cpu_s'), 0)} µs, the rest the embedded Postgres and its bridge)`,
      cpu('svc') < 300,
    ],
    [
      'stream TTFB overhead under 1 ms',
      `${f(over('svc', 'stream', 'ttfb_p50_ms'))} ms`,
      over('svc', 'stream', 'ttfb_p50_ms') < 1,
    ],
  ]
  console.log('\nTargets (svc = this product, full pipeline)\n')
  console.log('| target | measured | met |')
  console.log('|---|---|---|')
  for (const [label, value, ok] of checks) console.log(`| ${label} | ${value} | ${ok ? 'yes' : 'NO'} |`)
  if (targets.includes('workerd-2iso')) {
    const floor = 'workerd-2iso'
    console.log(
      `\nThe two-isolate floor (front worker → service binding → pass-through, no code): ` +
        `c=1 p50 overhead ${f(over(floor, 'c1', 'p50_ms'))} ms, ` +
        `c=32 ${f(get(floor, 'c32', 'rps'), 0)} req/s (${f(get(floor, 'c32', 'rps') / get('portkey', 'c32', 'rps'), 2)}× Portkey), ` +
        `CPU ${f(cpu(floor), 0)} µs, TTFB overhead ${f(over(floor, 'stream', 'ttfb_p50_ms'))} ms.`,
    )
  }
}
