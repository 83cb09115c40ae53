#!/usr/bin/env bash
# `npm test`: typecheck (strict), lint and format check (zero warnings), unit tests inside
# workerd, and end-to-end tests against the whole stack on embedded PGlite and, for what depends
# on the database, on the real PostgreSQL server (TEST_POSTGRES_URL, default
# postgres://postgres@127.0.0.1:5432/postgres). vitest.config.ts groups the projects and says how
# many files of each group run at once (README, "Which tests run where").
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== typecheck"
tsc --noEmit -p tsconfig.json
tsc --noEmit -p tsconfig.node.json

echo "== lint"
biome check --error-on-warnings .

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
