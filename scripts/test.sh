#!/usr/bin/env bash
# The project's test command (`npm test`): build, unit/HTTP tests, then the
# Playwright end-to-end tests against the built server. Every stage runs even
# when an earlier one failed (except e2e, which needs a build), and the last
# line is always the totals: `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
export NEXT_TELEMETRY_DISABLED=1

passed=0
failed=0
status=0
e2e_json=playwright-report/results.json
unit_log="$(mktemp -t leasehold-unit-XXXXXX.log)"
trap 'rm -f "$unit_log"' EXIT

echo "== build"
if npm run build; then
  built=1
else
  built=0
  status=1
  echo "build failed: the end-to-end tests cannot run" >&2
fi

echo "== typecheck and lint (import boundaries)"
if npm run --silent typecheck && npm run --silent lint; then
  passed=$((passed + 1))
else
  status=1
  failed=$((failed + 1))
fi

echo "== unit and HTTP tests"
bash scripts/test-unit.sh 2>&1 | tee "$unit_log"
unit_rc=${PIPESTATUS[0]}
unit_pass=$(awk '/^# pass /{n+=$3} END{print n+0}' "$unit_log")
unit_fail=$(awk '/^# (fail|cancelled) /{n+=$3} END{print n+0}' "$unit_log")
if ((unit_rc != 0)); then
  status=1
  # A runner that died before its summary still counts as a failure.
  ((unit_fail == 0)) && unit_fail=1
fi
passed=$((passed + unit_pass))
failed=$((failed + unit_fail))

if ((built)); then
  echo "== end-to-end tests"
  rm -f "$e2e_json"
  npx playwright test
  e2e_rc=$?
  if [[ -f $e2e_json ]]; then
    read -r e2e_pass e2e_fail < <(node -e '
      const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).stats ?? {};
      console.log((s.expected ?? 0) + (s.flaky ?? 0), s.unexpected ?? 0);
    ' "$e2e_json")
  else
    e2e_pass=0
    e2e_fail=0
  fi
  if ((e2e_rc != 0)); then
    status=1
    ((e2e_fail == 0)) && e2e_fail=1
  fi
  passed=$((passed + e2e_pass))
  failed=$((failed + e2e_fail))
else
  failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
exit "$status"
