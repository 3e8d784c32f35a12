-- wrk script of the bench: POST the body in the file $BENCH_BODY_FILE with the API key $BENCH_API_KEY, and
-- print one machine-readable line at the end (latencies in microseconds). With $BENCH_API_KEYS (comma-
-- separated), the requests take turns among those keys instead, each thread from the first: one request per
-- key is built once per thread, so a request costs wrk no more Lua than a table lookup.
local file = assert(io.open(os.getenv("BENCH_BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.body = file:read("*a")
file:close()
wrk.headers["Content-Type"] = "application/json"
wrk.headers["x-goog-api-key"] = os.getenv("BENCH_API_KEY") or "bench-key"

local keys = {}
for key in string.gmatch(os.getenv("BENCH_API_KEYS") or "", "[^,]+") do
  keys[#keys + 1] = key
end
if #keys > 0 then
  local built, turn = {}, 0
  init = function(args)
    for i, key in ipairs(keys) do
      wrk.headers["x-goog-api-key"] = key
      built[i] = wrk.format()
    end
  end
  request = function()
    turn = turn % #built + 1
    return built[turn]
  end
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d,"mean_us":%.1f,"max_us":%d}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean, latency.max))
end
