#!/usr/bin/env bash
# Chat completions benchmark, one run, all targets against the same local mock upstream
# (docs/benchmarks.md, "Chat completions"). Adapted from the team's peer-bench harness.
#
#   direct        the mock upstream itself (127.0.0.1:18080)
#   svc-limited   the same stack and route with a live key carrying per-key limits (model list,
#                 spend limit, its own rates; none reached): what the limits add to each request
#   svc           this product as in production: plain `workerd serve` on the generated config
#                 (bench/chat-stack.ts = scripts/stack.ts runtime 'workerd', no Miniflare entry
#                 worker or outbound interceptor; STACK_RUNTIME=miniflare to compare), live key,
#                 full auth + plan checks + RateLimiter object + metering + batched ledger flush
#                 to Postgres (:18790)
#   portkey       Portkey AI Gateway 1.15.2 (bench/peer, installed here with npm ci) (:18787)
#   workerd-bare  a minimal pass-through Worker on bare `workerd serve` (:18789)
#   workerd-2iso  the architecture's floor: a front Worker that only hands the request through a
#                 service binding to that pass-through (two isolates, no code) (:18786)
#   wrangler-dev  the same minimal Worker under `wrangler dev` (:18788), for reference
#
# Per round and test (c1 = wrk -c1 10 s, c32 = wrk -c32 15 s, seq = 3000 sequential requests timed
# one by one, stream = 300 sequential SSE requests, TTFB = first body byte), targets run back to
# back in an order rotated each round. wrk's latencies are corrected for coordinated omission (a
# slow response adds samples for the requests an open-loop client would have sent meanwhile); seq
# reports each request's own time (bench/chat-latency-client.mjs).
# CPU per request = CPU ticks of the target's whole process tree during c32 / requests (for svc:
# node + workerd + embedded Postgres; workerd alone is reported beside it). "Foreign" CPU (other processes on the box) is recorded;
# a measurement is repeated (up to RETRIES) when it exceeds FOREIGN_MAX cores.
#
# env: ROUNDS(3) C1_DUR(10) C32_DUR(15) C32_CONN(32) SEQ_REQ(3000) STREAM_REQ(300) WARM_S(5)
#      FOREIGN_MAX(0.10) RETRIES(3) STACK_RUNTIME(workerd)
#      TARGETS("direct svc svc-limited portkey workerd-bare workerd-2iso wrangler-dev")
# Output: bench/results/chat-<ts>.jsonl (+ .meta, .summary.md); logs in bench/results/chat-<ts>-logs/
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$D/.." && pwd); cd "$D"
ROUNDS=${ROUNDS:-3}; C1_DUR=${C1_DUR:-10}; C32_DUR=${C32_DUR:-15}; C32_CONN=${C32_CONN:-32}
STREAM_REQ=${STREAM_REQ:-300}; SEQ_REQ=${SEQ_REQ:-3000}; WARM_S=${WARM_S:-5}; FOREIGN_MAX=${FOREIGN_MAX:-0.10}; RETRIES=${RETRIES:-3}
WANT=${TARGETS:-"direct svc svc-limited portkey workerd-bare workerd-2iso wrangler-dev"}
# svc-limited needs the svc stack: it is the same stack with the key that carries per-key limits.
[[ " $WANT " == *" svc-limited "* && " $WANT " != *" svc "* ]] && WANT="$WANT svc"
TS=$(date +%Y%m%d-%H%M%S); mkdir -p results
OUT=results/chat-$TS.jsonl; LOGS=results/chat-$TS-logs; RUN=$LOGS/run; mkdir -p "$LOGS" "$RUN"
TICK=$(getconf CLK_TCK); NODE="$ROOT/node_modules/.bin/node"; export PATH="$ROOT/node_modules/.bin:$PATH"
log() { echo "[$(date +%T)] $*" >&2; }

for port in 18080 18786 18787 18788 18789 18790; do
  if ss -ltnH | grep -qE "127.0.0.1:$port |\*:$port "; then echo "port $port is in use; stop what runs there first" >&2; exit 1; fi
done

# ---- start the targets (each in its own process group; PIDs in $RUN) --------------------------
start() { local name=$1; shift; setsid "$@" > "$LOGS/$name.log" 2>&1 & echo $! > "$RUN/$name.pid"; }
stop_all() {
  # The product first, by its own process only, so it stops workerd and its database itself.
  if [[ -f $RUN/svc.pid ]]; then
    local s; s=$(cat "$RUN/svc.pid"); kill -TERM "$s" 2>/dev/null
    for _ in $(seq 1 30); do kill -0 "$s" 2>/dev/null || break; sleep 1; done
  fi
  for f in "$RUN"/*.pid; do [[ -f $f ]] || continue
    local p; p=$(cat "$f"); kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null; done
  sleep 5
  for f in "$RUN"/*.pid; do [[ -f $f ]] || continue; kill -KILL -- "-$(cat "$f")" 2>/dev/null; rm -f "$f"; done
}
trap stop_all EXIT

want() { [[ " $WANT " == *" $1 "* ]]; }
start mock "$NODE" chat-mock-upstream.mjs 18080
if want portkey; then
  (cd peer && npm ci --no-audit --no-fund --silent) || { echo "npm ci in bench/peer failed" >&2; exit 1; }
  start portkey env NODE_ENV=production "$NODE" peer/node_modules/@portkey-ai/gateway/build/start-server.js --port=18787 --headless
fi
want wrangler-dev && start wrangler bash -c "cd chat-floor-worker && exec env CI=1 WRANGLER_SEND_METRICS=false wrangler dev --ip 127.0.0.1 --port 18788 --log-level warn"
want workerd-bare && start workerd bash -c "cd chat-floor-worker && exec '$ROOT/node_modules/@cloudflare/workerd-linux-64/bin/workerd' serve workerd.capnp"
want workerd-2iso && start workerd2 bash -c "cd chat-floor-worker && exec '$ROOT/node_modules/@cloudflare/workerd-linux-64/bin/workerd' serve two-isolates.capnp"
STACK_DIR=$(mktemp -d -t svc-bench-chat-XXXXXX)
want svc && start svc tsx "$ROOT/bench/chat-stack.ts" 18790 http://127.0.0.1:18080/v1 "$STACK_DIR"

for i in $(seq 1 120); do [[ -f "$STACK_DIR/bench-key-limited" ]] || ! want svc && break; sleep 1; done
KEY=$(cat "$STACK_DIR/bench-key" 2>/dev/null || true)
LIMITED_KEY=$(cat "$STACK_DIR/bench-key-limited" 2>/dev/null || true)
TARGETS_FILE=$LOGS/targets.conf
{
  echo "direct|http://127.0.0.1:18080/v1/chat/completions|authorization: Bearer sk-mock|mock|gpt-4o-mini"
  want svc && echo "svc|http://127.0.0.1:18790/svc/chat/completions|authorization: Bearer $KEY|svc|svc-cell"
  want svc-limited && echo "svc-limited|http://127.0.0.1:18790/svc/chat/completions|authorization: Bearer $LIMITED_KEY|svc|svc-cell"
  want portkey && echo "portkey|http://127.0.0.1:18787/v1/chat/completions|authorization: Bearer sk-mock;;x-portkey-provider: openai;;x-portkey-custom-host: http://127.0.0.1:18080/v1|portkey|gpt-4o-mini"
  want workerd-bare && echo "workerd-bare|http://127.0.0.1:18789/v1/chat/completions|authorization: Bearer sk-mock|workerd|gpt-4o-mini"
  want workerd-2iso && echo "workerd-2iso|http://127.0.0.1:18786/v1/chat/completions|authorization: Bearer sk-mock|workerd2|gpt-4o-mini"
  want wrangler-dev && echo "wrangler-dev|http://127.0.0.1:18788/v1/chat/completions|authorization: Bearer sk-mock|wrangler|gpt-4o-mini"
} > "$TARGETS_FILE"
mapfile -t TARGETS < "$TARGETS_FILE"
fld() { cut -d'|' -f"$2" <<< "$1"; }

ready=0
for i in $(seq 1 90); do
  ready=1
  for t in "${TARGETS[@]}"; do
    args=(); IFS=';' read -ra H <<< "$(fld "$t" 3)"; for h in "${H[@]}"; do [[ -n "$h" ]] && args+=(-H "$h"); done
    code=$(curl -s -o /dev/null -w '%{http_code}' -m 3 "$(fld "$t" 2)" -H 'content-type: application/json' "${args[@]}" \
      -d "{\"model\":\"$(fld "$t" 5)\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" || true)
    [[ "$code" == 200 ]] || ready=0
  done
  [[ $ready == 1 ]] && break; sleep 1
done
[[ $ready == 1 ]] || { log "targets not ready; see $LOGS"; exit 1; }
log "all targets ready"

# ---- measure (from peer-bench/bench.sh) --------------------------------------------------------
tree() { local p=$1; [[ -d /proc/$p ]] || return; echo "$p"; for c in $(pgrep -P "$p" 2>/dev/null); do tree "$c"; done; }
pids_of() { [[ -n "$1" && -f $RUN/$1.pid ]] && tree "$(cat "$RUN/$1.pid")"; }
workerd_of() { local p; for p in "$@"; do [[ "$(cat /proc/$p/comm 2>/dev/null)" == workerd ]] && echo "$p"; done; }
ticks() { local s=0 p; for p in "$@"; do [[ -r /proc/$p/stat ]] && s=$(( s + $(awk '{print $14+$15}' /proc/$p/stat 2>/dev/null || echo 0) )); done; echo $s; }
busy() { awk '/^cpu /{print $2+$3+$4}' /proc/stat; }
ALLSERVER() { for f in "$RUN"/*.pid; do tree "$(cat "$f")"; done; }

measure() {
  local test=$1 url=$2 hdrs=$3 pf=$4 model=$5 out tf gp gw up all b0 b1 a0 a1 g0 g1 w0 w1 u0 u1 t0 t1 cl
  gp=$(pids_of "$pf"); gw=$(workerd_of $gp); up=$(pids_of mock); all=$(ALLSERVER); tf=$(mktemp)
  g0=$(ticks $gp); w0=$(ticks $gw); u0=$(ticks $up); a0=$(ticks $all); b0=$(busy); t0=$(date +%s.%N)
  case $test in
    c1)  out=$( { TIMEFORMAT='%U %S'; time HDRS="$hdrs" MODEL="$model" wrk -t1 -c1 -d"${C1_DUR}"s --timeout 10s -s chat-wrk-post.lua "$url"; } 2>"$tf" ) ;;
    c32) out=$( { TIMEFORMAT='%U %S'; time HDRS="$hdrs" MODEL="$model" wrk -t1 -c"$C32_CONN" -d"${C32_DUR}"s --timeout 10s -s chat-wrk-post.lua "$url"; } 2>"$tf" ) ;;
    seq) out=$( { TIMEFORMAT='%U %S'; time HDRS="$hdrs" MODEL="$model" "$NODE" chat-latency-client.mjs "$url" "$SEQ_REQ" 50; } 2>"$tf" ) ;;
    stream) out=$( { TIMEFORMAT='%U %S'; time HDRS="$hdrs" MODEL="$model" "$NODE" chat-stream-client.mjs "$url" "$STREAM_REQ" 20; } 2>"$tf" ) ;;
  esac
  t1=$(date +%s.%N); b1=$(busy); a1=$(ticks $all); g1=$(ticks $gp); w1=$(ticks $gw); u1=$(ticks $up)
  cl=$(tail -1 "$tf" | awk '{print $1+$2}'); rm -f "$tf"
  local res; res=$(sed -n 's/^RESULT {//p' <<< "$out"); [[ -z "$res" ]] && return 1
  awk -v b=$((b1-b0)) -v a=$((a1-a0)) -v g=$((g1-g0)) -v k=$((w1-w0)) -v u=$((u1-u0)) -v cl="$cl" -v w="$(echo "$t1 - $t0" | bc)" -v T="$TICK" \
    'BEGIN{f=(b-a)/T-cl; if(f<0)f=0; printf "\"wall_s\":%.2f,\"client_cpu_s\":%.2f,\"gw_cpu_s\":%.2f,\"gw_workerd_cpu_s\":%.2f,\"up_cpu_s\":%.2f,\"foreign_cpu_s\":%.2f,\"foreign_cores\":%.3f,", w, cl, g/T, k/T, u/T, f, f/w}'
  echo "$res"
}

{ echo "# $(date -Is) host: $(nproc) cpu $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), kernel $(uname -r), node $("$NODE" -v), $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)"
  echo "# ROUNDS=$ROUNDS C1_DUR=$C1_DUR C32_DUR=$C32_DUR C32_CONN=$C32_CONN SEQ_REQ=$SEQ_REQ STREAM_REQ=$STREAM_REQ FOREIGN_MAX=$FOREIGN_MAX STACK_RUNTIME=${STACK_RUNTIME:-workerd} load=$(cut -d' ' -f1-3 /proc/loadavg)"
  printf '# target: %s\n' "${TARGETS[@]}" | sed -E 's/svc_sk_live_[A-Za-z0-9]+/svc_sk_live_…/g'; } > "$OUT.meta"
log "writing $OUT"

for t in "${TARGETS[@]}"; do log "warmup $(fld "$t" 1)"
  HDRS="$(fld "$t" 3)" MODEL="$(fld "$t" 5)" wrk -t1 -c8 -d"${WARM_S}"s -s chat-wrk-post.lua "$(fld "$t" 2)" > /dev/null
  HDRS="$(fld "$t" 3)" MODEL="$(fld "$t" 5)" "$NODE" chat-stream-client.mjs "$(fld "$t" 2)" 100 0 > /dev/null
done

NT=${#TARGETS[@]}
for r in $(seq 1 "$ROUNDS"); do
  for test in c1 c32 seq stream; do
    for k in $(seq 0 $((NT-1))); do
      t=${TARGETS[$(( (k + r - 1) % NT ))]}; n=$(fld "$t" 1)
      for try in $(seq 0 "$RETRIES"); do
        res=$(measure "$test" "$(fld "$t" 2)" "$(fld "$t" 3)" "$(fld "$t" 4)" "$(fld "$t" 5)") || { log "FAILED $n $test"; res=""; break; }
        fc=$(sed -E 's/.*"foreign_cores":([0-9.]+).*/\1/' <<< "$res"); fs=$(sed -E 's/.*"foreign_cpu_s":([0-9.]+).*/\1/' <<< "$res")
        log "round $r $test $n try $try foreign=${fc} :: $(cut -c1-160 <<< "${res#*foreign_cores*,}")"
        awk -v f="$fc" -v s="$fs" -v m="$FOREIGN_MAX" 'BEGIN{exit !(f<=m || s<=0.1)}' && break
        [[ $try -lt $RETRIES ]] && { log "  foreign CPU > $FOREIGN_MAX cores, retrying"; sleep 5; }
      done
      [[ -n "$res" ]] && echo "{\"round\":$r,\"target\":\"$n\",\"test\":\"$test\",\"tries\":$((try+1)),$res" >> "$OUT"
    done
  done
done

if want svc; then
  sleep 3   # the RateLimiter writes within 100 ms and flushes to Postgres about once a second
  tsx "$ROOT/bench/chat-stack.ts" ledger "$STACK_DIR" | sed 's/^/# svc /' | tee -a "$OUT.meta" >&2
fi
stop_all; trap - EXIT
rm -rf "$STACK_DIR"
"$NODE" chat-summarize.mjs "$OUT" | tee "${OUT%.jsonl}.summary.md"
