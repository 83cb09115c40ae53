#!/usr/bin/env bash
# `npm test`: typecheck (strict), lint and format check (zero warnings), unit tests inside
# workerd, and end-to-end tests against the whole stack on embedded PGlite and, for what depends
# on the database, on the real PostgreSQL server (TEST_POSTGRES_URL, default
# postgres://postgres@127.0.0.1:5432/postgres). vitest.config.ts groups the projects and says how
# many files of each group run at once (README, "Which tests run where").
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== typecheck and lint"
# The four checks side by side (each keeps at most one core busy); their output in this order.
# tsconfig.client.json: the console's browser scripts (DOM types, no Workers types).
checks=$(mktemp -d -t svc-checks-XXXXXX)
tsc --noEmit -p tsconfig.json >"$checks/1" 2>&1 &
workers=$!
tsc --noEmit -p tsconfig.node.json >"$checks/2" 2>&1 &
node=$!
tsc --noEmit -p tsconfig.client.json >"$checks/3" 2>&1 &
client=$!
biome check --error-on-warnings . >"$checks/4" 2>&1 &
lint=$!
failed=0
for check in "1 $workers tsc -p tsconfig.json" "2 $node tsc -p tsconfig.node.json" \
  "3 $client tsc -p tsconfig.client.json" "4 $lint biome check"; do
  read -r file pid name <<<"$check"
  wait "$pid" || { failed=1; echo "-- $name failed:"; }
  cat "$checks/$file"
done
rm -rf "$checks"
if [ "$failed" -ne 0 ]; then exit 1; fi

echo "== tests"
report=$(mktemp -t svc-vitest-XXXXXX.json)
status=0
vitest run --reporter=default --reporter=json --outputFile.json="$report" "$@" || status=$?
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`)
' "$report" || true
rm -f "$report"
exit $status
