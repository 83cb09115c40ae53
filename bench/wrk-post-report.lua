-- wrk script: POST the bytes of BODY_FILE (e.g. an OTLP export, gzip or not) or the text of BODY
-- (JSON), with extra headers from HDRS ("k: v;;k: v"); prints one JSON result line.
-- A JSON-RPC error inside a 200 answer would not be counted by wrk: bench/mcp.ts checks each
-- target's answer once before measuring.
wrk.method = "POST"
local file = os.getenv("BODY_FILE")
if file then
  local f = assert(io.open(file, "rb"))
  wrk.body = f:read("*all")
  f:close()
else
  wrk.body = os.getenv("BODY") or ""
  wrk.headers["Content-Type"] = "application/json"
end
local hdrs = os.getenv("HDRS") or ""
for h in string.gmatch(hdrs, "([^;]+)") do
  local k, v = string.match(h, "^%s*([^:]+):%s*(.-)%s*$")
  if k then wrk.headers[k] = v end
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'RESULT {"requests":%d,"duration_s":%.3f,"rps":%.1f,"p50_ms":%.4f,"p90_ms":%.4f,"p99_ms":%.4f,"mean_ms":%.4f,"non2xx":%d,"sock_err":%d}\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency.mean / 1000, e.status, e.connect + e.read + e.write + e.timeout))
end
