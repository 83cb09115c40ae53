-- wrk script: POST a chat completion (non-streaming). From the team's peer-bench harness; the
-- model is per target (our gateway takes an alias such as svc-cell).
-- env: HDRS="k: v;;k: v"  MODEL=name (default gpt-4o-mini)  MAX_REQ=N (stop each thread after N responses; 0 = run for -d)
wrk.method = "POST"
local model = os.getenv("MODEL") or "gpt-4o-mini"
wrk.body = '{"model":"' .. model .. '","messages":[{"role":"user","content":"Say hello"}],"max_tokens":32}'
wrk.headers["Content-Type"] = "application/json"
local hdrs = os.getenv("HDRS") or ""
for h in string.gmatch(hdrs, "([^;]+)") do
  local k, v = string.match(h, "^%s*([^:]+):%s*(.-)%s*$")
  if k then wrk.headers[k] = v end
end
local max = tonumber(os.getenv("MAX_REQ") or "0")
if max > 0 then
  local n = 0
  function response(status, headers, body)
    n = n + 1
    if n >= max then wrk.thread:stop() end
  end
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'RESULT {"requests":%d,"duration_s":%.3f,"rps":%.1f,"p50_ms":%.4f,"p90_ms":%.4f,"p99_ms":%.4f,"mean_ms":%.4f,"max_ms":%.4f,"non2xx":%d,"sock_err":%d}\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency.mean / 1000, latency.max / 1000, e.status, e.connect + e.read + e.write + e.timeout))
end
