-- wrk script: GET, each request with the next bearer token from the file named by TOKENS (one per
-- line); the thread stops once every token was used once. Prints one JSON result line.
local tokens = {}
for line in io.lines(os.getenv("TOKENS")) do tokens[#tokens + 1] = line end
local i = 0
request = function()
  i = i + 1
  local token = tokens[((i - 1) % #tokens) + 1]
  return wrk.format("GET", nil, { ["Authorization"] = "Bearer " .. token })
end
local seen = 0
response = function(status, headers, body)
  seen = seen + 1
  if seen >= #tokens then wrk.thread:stop() end
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'RESULT {"requests":%d,"duration_s":%.3f,"rps":%.1f,"p50_ms":%.4f,"p90_ms":%.4f,"p99_ms":%.4f,"mean_ms":%.4f,"non2xx":%d,"sock_err":%d}\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency.mean / 1000, e.status, e.connect + e.read + e.write + e.timeout))
end
