-- wrk script of the load test (load_test.sh): each thread cycles through a tiny job
-- (POST /transpose, answered once it is done), two reads of its latest job
-- (GET /jobs/{id}) and a health check (GET /health), and counts the statuses it got;
-- done() prints them as "statuses: 2xx=N 4xx=N 429=N 5xx=N other=N" and the mix.
local job_body = '{"m":64,"n":64,"variant":"naive","warmup":0,"batches":1,"reps":1,' ..
                 '"isolation":"shared"}'
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  s2xx, s4xx, s429, s5xx, sother = 0, 0, 0, 0, 0
  posts, reads, healths = 0, 0, 0
  step, last_job = 0, nil
  post_req = wrk.format("POST", "/transpose", {["Content-Type"] = "application/json"}, job_body)
  health_req = wrk.format("GET", "/health")
end

function request()
  step = step % 4 + 1
  if step == 1 or last_job == nil then
    posts = posts + 1
    return post_req
  elseif step == 4 then
    healths = healths + 1
    return health_req
  end
  reads = reads + 1
  return wrk.format("GET", "/jobs/" .. last_job)
end

function response(status, headers, body)
  if status >= 200 and status < 300 then
    s2xx = s2xx + 1
    local id = body:match('^{"id":%s*(%d+)')
    if id and body:find('"type":%s*"transpose"') then last_job = id end
  elseif status == 429 then
    s429 = s429 + 1
  elseif status >= 400 and status < 500 then
    s4xx = s4xx + 1
  elseif status >= 500 then
    s5xx = s5xx + 1
  else
    sother = sother + 1
  end
end

function done(summary, latency, requests)
  local t = {s2xx = 0, s4xx = 0, s429 = 0, s5xx = 0, sother = 0, posts = 0, reads = 0, healths = 0}
  for _, thread in ipairs(threads) do
    for k, _ in pairs(t) do t[k] = t[k] + thread:get(k) end
  end
  io.write(string.format("statuses: 2xx=%d 4xx=%d 429=%d 5xx=%d other=%d\n",
                         t.s2xx, t.s4xx, t.s429, t.s5xx, t.sother))
  io.write(string.format("mix: jobs=%d job_reads=%d health=%d\n", t.posts, t.reads, t.healths))
  io.write(string.format("latency_ms: p50=%.3f p90=%.3f p99=%.3f max=%.3f\n",
                         latency:percentile(50) / 1000, latency:percentile(90) / 1000,
                         latency:percentile(99) / 1000, latency.max / 1000))
end
