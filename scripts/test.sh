#!/usr/bin/env bash
# The project's test command (`npm test`): build, unit/HTTP tests (a SQLite
# pass, then the HTTP-level files on PostgreSQL with two instances), then the
# Playwright end-to-end tests against the built server, twice: on SQLite, and
# on PostgreSQL with the console on instance A and the tests' API calls on B.
# Every stage runs even when an earlier one failed (except e2e, which needs a
# build), each prints its own counts, and the last line is always the totals
# of all of them: `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
export NEXT_TELEMETRY_DISABLED=1

passed=0
failed=0
status=0
stage_failures=()
e2e_json=playwright-report/results.json
e2e_json_pg=playwright-report/results-postgres.json
unit_log="$(mktemp -t leasehold-unit-XXXXXX.log)"
# Each unit pass's TAP, for the failure digest at the end.
export LEASEHOLD_TEST_TAP_DIR="$(mktemp -d -t leasehold-tap-XXXXXX)"
trap 'rm -f "$unit_log"; rm -rf "$LEASEHOLD_TEST_TAP_DIR"' EXIT

echo "== system packages (Debian: chromium; Java, python3 and Go for the generated clients)"
bash scripts/system-deps.sh || status=1

echo "== build"
if npm run build; then
  built=1
else
  built=0
  status=1
  echo "build failed: the end-to-end tests cannot run" >&2
  stage_failures+=("the build failed (its output is above): the end-to-end tests did not run")
fi

echo "== typecheck and lint (import boundaries)"
if npm run --silent typecheck && npm run --silent lint; then
  passed=$((passed + 1))
else
  status=1
  failed=$((failed + 1))
  stage_failures+=("typecheck or lint failed (its output is above)")
fi

echo "== unit and HTTP tests (SQLite, then PostgreSQL)"
bash scripts/test-unit.sh 2>&1 | tee "$unit_log"
unit_rc=${PIPESTATUS[0]}
unit_pass=$(awk '/^# pass /{n+=$3} END{print n+0}' "$unit_log")
unit_fail=$(awk '/^# (fail|cancelled) /{n+=$3} END{print n+0}' "$unit_log")
if ((unit_rc != 0)); then
  status=1
  # A runner that died before its summary still counts as a failure.
  if ((unit_fail == 0)); then
    unit_fail=1
    stage_failures+=("a unit pass exited $unit_rc without counting a failure (a runner died: see its output above)")
  fi
fi
passed=$((passed + unit_pass))
failed=$((failed + unit_fail))

# e2e <label> <results.json> [VAR=value…]: one Playwright run, counted.
e2e() {
  local label=$1 json=$2
  shift 2
  echo "== end-to-end tests ($label)"
  rm -f "$json"
  env "$@" npx playwright test
  local rc=$? e2e_pass=0 e2e_fail=0
  if [[ -f $json ]]; then
    read -r e2e_pass e2e_fail < <(node -e '
      const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).stats ?? {};
      console.log((s.expected ?? 0) + (s.flaky ?? 0), s.unexpected ?? 0);
    ' "$json")
  fi
  if ((rc != 0)); then
    status=1
    ((e2e_fail == 0)) && e2e_fail=1
  fi
  echo "end-to-end ($label): $e2e_pass passed, $e2e_fail failed"
  passed=$((passed + e2e_pass))
  failed=$((failed + e2e_fail))
}

if ((built)); then
  e2e sqlite "$e2e_json"
  # The console on instance A, the tests' API calls on instance B, one PostgreSQL database.
  e2e "postgres, two instances" "$e2e_json_pg" LEASEHOLD_E2E_STORE=postgres
else
  failed=$((failed + 1))
fi

# CI keeps the log's tail: name every failure there, with what it waited
# for and what it saw (scripts/failure-digest.mjs), just above the totals.
if ((failed > 0)); then
  for f in "${stage_failures[@]}"; do echo "✖ $f"; done
  reports=()
  for tap in "$LEASEHOLD_TEST_TAP_DIR"/*.tap; do
    [[ -f $tap ]] && reports+=("$(basename "$tap" .tap)=$tap")
  done
  [[ -f $e2e_json ]] && reports+=("e2e sqlite=$e2e_json")
  [[ -f $e2e_json_pg ]] && reports+=("e2e postgres=$e2e_json_pg")
  node scripts/failure-digest.mjs "${reports[@]}"
fi
echo "$passed passed, $failed failed"
exit "$status"
