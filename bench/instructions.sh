#!/usr/bin/env bash
# Instructions per request: the product's workerd under valgrind's callgrind, which counts the
# instructions executed instead of timing them. Seconds of CPU on a shared 2-vCPU machine drift by
# ±15% between identical runs; instruction counts repeat within a few percent, so a change worth
# 5% shows up here in one run (compare two commits by running this on each).
#
#   bash bench/instructions.sh                     # chat:300 get:300 chat:300
#   MEASURE="chat:1000 get:500 health:300" bash bench/instructions.sh   (health: GET /healthz, the gateway alone)
#
# How: bench/chat-stack.ts starts the stack (embedded Postgres, migrations, seed, plain workerd);
# its workerd is paused and a second workerd runs the same generated config on port 18791 under
# callgrind (JIT-safe: --smc-check=all-non-file; ~50x slower). Each measurement sends N requests
# to warm up, zeroes the counters, sends N more one at a time (curl), and divides the dumped total
# by N. `chat` = POST /svc/chat/completions (live key, the benchmark's mock upstream), `get` =
# GET /platform/v1/crypto/algorithms?type=kem (the gateway benchmark's route). Everything the
# workerd process does in that window counts: both isolates, the RateLimiter object, its alarms
# and ledger flushes, GC. At c=1 under valgrind each settle and flush carries few rows, so the
# metering share is larger than under load. Needs valgrind (on every machine of this kind).
# Output: one line per measurement; the dumps stay in $DIR for callgrind_annotate.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${DIR:-$(mktemp -d -t svc-instructions-XXXXXX)}
MEASURE=${MEASURE:-"chat:300 get:300 chat:300"}
PORT=18791

for port in 18080 18790 $PORT; do
  if (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; then echo "port $port is in use; stop what runs there first" >&2; exit 1; fi
done
command -v valgrind > /dev/null || { echo "valgrind is required (apt-get install valgrind)" >&2; exit 1; }
node bench/chat-mock-upstream.mjs 18080 > "$DIR/mock.log" 2>&1 &
MOCK=$!
setsid npx tsx bench/chat-stack.ts 18790 http://127.0.0.1:18080/v1 "$DIR/stack" > "$DIR/stack.log" 2>&1 &
STACK=$!
VG=""
PAUSED=""
cleanup() {
  [[ -n $VG ]] && kill "$VG" 2> /dev/null || true
  [[ -n $PAUSED ]] && kill -CONT "$PAUSED" 2> /dev/null || true
  kill -TERM -- "-$STACK" 2> /dev/null || true
  kill "$MOCK" 2> /dev/null || true
}
trap cleanup EXIT
for _ in $(seq 1 120); do [[ -f $DIR/stack/bench-key ]] && break; sleep 1; done
KEY=$(cat "$DIR/stack/bench-key")
# The stack's own workerd (found by its config path, stopped by pid) stays paused meanwhile.
PAUSED=$(pgrep -f "$DIR/stack/workerd/config.capnp" | head -1)
kill -STOP "$PAUSED"
sed "s/127.0.0.1:18790/127.0.0.1:$PORT/" "$DIR/stack/workerd/config.capnp" > "$DIR/stack/workerd/config-callgrind.capnp"
WORKERD=$(node -p "require('workerd').default")
(cd "$DIR/stack/workerd" && exec valgrind --tool=callgrind --smc-check=all-non-file --cache-sim=no --branch-sim=no \
  --callgrind-out-file="$DIR/callgrind.%p" "$WORKERD" serve config-callgrind.capnp) \
  > "$DIR/valgrind.log" 2>&1 &
# `exec` makes the subshell valgrind itself: every callgrind_control below names this pid, so
# another callgrind on the machine (a second run, someone else's) neither gets our zero/dump
# requests nor splits our counts.
VG=$!
for _ in $(seq 1 180); do curl -s -m 5 -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 1; done
curl -s -m 5 -o /dev/null "http://127.0.0.1:$PORT/healthz" || { echo "workerd under callgrind did not start: $DIR/valgrind.log" >&2; exit 1; }

chat() {
  curl -s -o /dev/null -w '%{http_code}\n' -H "authorization: Bearer $KEY" -H 'content-type: application/json' \
    -d '{"model":"svc-cell","messages":[{"role":"user","content":"Say hello"}],"max_tokens":32}' \
    "http://127.0.0.1:$PORT/svc/chat/completions"
}
get() {
  curl -s -o /dev/null -w '%{http_code}\n' -H "authorization: Bearer $KEY" \
    "http://127.0.0.1:$PORT/platform/v1/crypto/algorithms?type=kem"
}
health() {
  curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$PORT/healthz"
}
for m in $MEASURE; do
  kind=${m%%:*} n=${m##*:}
  for _ in $(seq 1 "$n"); do $kind; done > /dev/null
  callgrind_control -z "$VG" > /dev/null 2>&1
  codes=$(for _ in $(seq 1 "$n"); do $kind; done | sort | uniq -c | tr -s ' \n' ' ')
  callgrind_control -d "$VG" > /dev/null 2>&1
  sleep 2
  dump=$(ls -t "$DIR/callgrind.$VG".* | head -1)
  total=$(awk '/^summary:/ {print $2}' "$dump")
  echo "$kind: $((total / n)) instructions/request (n=$n, statuses:$codes) $dump"
done
