#!/usr/bin/env bash
# The project's test command (`npm test`): build, typecheck and lint, the
# unit/HTTP tests (a SQLite pass and the HTTP-level files on PostgreSQL with
# two instances), then the Playwright end-to-end tests against the built
# server, twice: on SQLite, and on PostgreSQL with the console on instance A
# and the tests' API calls on B.
#
# Each pass runs into its own log, printed whole when it ends, with its wall
# and CPU time (docs/design.md "How the CI time splits"). The passes run
# one after the other, the unit passes with LEASEHOLD_TEST_CONCURRENCY
# (default 2) files at once; the one test with a time budget (the leases
# page at 5,000 leases) runs in the SQLite end-to-end pass, or alone after
# both when they run side by side.
# LEASEHOLD_TEST_PARALLEL puts passes side by side: `e2e` (the two
# end-to-end passes) or `all` (the unit passes too); the default, `none`,
# is as fast on two cores, where Chromium already keeps both busy.
#
# Every stage runs even when an earlier one failed (except e2e, which needs a
# build), each prints its own counts and its wall and CPU time, and the end
# of the output names every failure (scripts/failure-digest.mjs) above the
# last line, always the totals of all of them: `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
export NEXT_TELEMETRY_DISABLED=1

passed=0
failed=0
status=0
stage_failures=()
# LEASEHOLD_TEST_WORK_DIR keeps every pass's log and TAP there (per-file times for docs/design.md); else they go with the run.
if [[ -n ${LEASEHOLD_TEST_WORK_DIR:-} ]]; then
  work=$LEASEHOLD_TEST_WORK_DIR
  mkdir -p "$work"
else
  work="$(mktemp -d -t leasehold-test-XXXXXX)"
  trap 'rm -rf "$work"' EXIT
fi
# Each unit pass's TAP, for the failure digest at the end.
export LEASEHOLD_TEST_TAP_DIR="$work/tap"
# Every test server's log, from both unit passes, for the secrets scan after them.
export LEASEHOLD_TEST_LOG_DIR="${LEASEHOLD_TEST_LOG_DIR:-$work/server-logs}"
mkdir -p "$LEASEHOLD_TEST_TAP_DIR" "$LEASEHOLD_TEST_LOG_DIR"
export LEASEHOLD_TEST_CONCURRENCY="${LEASEHOLD_TEST_CONCURRENCY:-2}"
parallel="${LEASEHOLD_TEST_PARALLEL:-none}"
serial=1
# The test with a time budget: never beside another pass.
timed='with 5,000 held leases'

# timed_run <log> <command…>: the command's output and its wall and CPU time into <log>; its exit code.
timed_run() {
  local log=$1
  shift
  local TIMEFORMAT="-- %0R s wall, %0U s user + %0S s system CPU: $*"
  { time "$@"; } >"$log" 2>&1
}

# side_by_side <name>… : runs "$name" (a function) for each name, at once unless serial=1, else in turn; prints each log in order.
side_by_side() {
  local pids=() name
  for name in "$@"; do
    if ((serial)); then
      "$name"
      echo $? >"$work/$name.rc"
      cat "$work/$name.log"
    else
      { "$name"; echo $? >"$work/$name.rc"; } &
      pids+=($!)
    fi
  done
  ((serial)) && return
  wait "${pids[@]}"
  for name in "$@"; do cat "$work/$name.log"; done
}

echo "== system packages (Debian: chromium; Java, python3 and Go for the generated clients)"
bash scripts/system-deps.sh || status=1

echo "== build"
if npm run build; then
  built=1
  # dist/ is fresh: tests use it as built, never rebuild it under each other (server/testing/process.ts).
  export LEASEHOLD_TEST_PREBUILT=1
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

unit_sqlite() { LEASEHOLD_TEST_PASSES=sqlite timed_run "$work/unit_sqlite.log" bash scripts/test-unit.sh; }
unit_postgres() { LEASEHOLD_TEST_PASSES=postgres timed_run "$work/unit_postgres.log" bash scripts/test-unit.sh; }
unit_logs() { LEASEHOLD_TEST_PASSES=logs timed_run "$work/unit_logs.log" bash scripts/test-unit.sh; }

[[ $parallel == all ]] && serial=0
echo "== unit and HTTP tests: SQLite and PostgreSQL$( ((serial)) && echo ', one after the other' || echo ', side by side'), $LEASEHOLD_TEST_CONCURRENCY files at once"
side_by_side unit_sqlite unit_postgres
echo "== the secrets scan of every server log the unit passes wrote"
serial=1
side_by_side unit_logs
for pass in unit_sqlite unit_postgres unit_logs; do
  log="$work/$pass.log"
  rc=$(cat "$work/$pass.rc")
  n_pass=$(awk '/^# pass /{n+=$3} END{print n+0}' "$log")
  n_fail=$(awk '/^# (fail|cancelled) /{n+=$3} END{print n+0}' "$log")
  if ((rc != 0)); then
    status=1
    # A runner that died before its summary still counts as a failure.
    if ((n_fail == 0)); then
      n_fail=1
      stage_failures+=("$pass exited $rc without counting a failure (a runner died: see its output above)")
    fi
  fi
  passed=$((passed + n_pass))
  failed=$((failed + n_fail))
done

# e2e_counted <label> <results.json> <rc>: adds one Playwright run's counts.
e2e_counted() {
  local label=$1 json=$2 rc=$3 e2e_pass=0 e2e_fail=0
  if [[ -f $json ]]; then
    read -r e2e_pass e2e_fail < <(node -e '
      const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).stats ?? {};
      console.log((s.expected ?? 0) + (s.flaky ?? 0), s.unexpected ?? 0);
    ' "$json")
  fi
  if ((rc != 0)); then
    status=1
    if ((e2e_fail == 0)); then
      e2e_fail=1
      stage_failures+=("end-to-end ($label) exited $rc without counting a failure: see its output above")
    fi
  fi
  echo "end-to-end ($label): $e2e_pass passed, $e2e_fail failed"
  passed=$((passed + e2e_pass))
  failed=$((failed + e2e_fail))
}

# Each Playwright run has its own report and output folder (playwright.config.ts).
reports=playwright-report
e2e_sqlite() { LEASEHOLD_E2E_RUN=sqlite timed_run "$work/e2e_sqlite.log" npx playwright test "${sqlite_grep[@]}"; }
e2e_postgres() { LEASEHOLD_E2E_RUN=postgres LEASEHOLD_E2E_STORE=postgres timed_run "$work/e2e_postgres.log" npx playwright test; }
e2e_timed() { LEASEHOLD_E2E_RUN=sqlite-timed timed_run "$work/e2e_timed.log" npx playwright test --grep "$timed"; }

if ((built)); then
  rm -f "$reports"/results-*.json
  [[ $parallel == e2e || $parallel == all ]] && serial=0
  echo "== end-to-end tests: SQLite, and PostgreSQL with two instances$( ((serial)) && echo ', one after the other' || echo ', side by side')"
  # One after the other, the SQLite pass runs the time-budget test too: one
  # worker, nothing beside it. Side by side, it runs alone after both.
  sqlite_grep=()
  rm -f "$work/e2e_timed.rc"
  ((serial)) || sqlite_grep=(--grep-invert "$timed")
  side_by_side e2e_sqlite e2e_postgres
  if ((!serial)); then
    serial=1
    echo "== end-to-end: the test with a time budget, alone on SQLite"
    side_by_side e2e_timed
  fi
  e2e_counted sqlite "$reports/results-sqlite.json" "$(cat "$work/e2e_sqlite.rc")"
  e2e_counted "postgres, two instances" "$reports/results-postgres.json" "$(cat "$work/e2e_postgres.rc")"
  [[ -f $work/e2e_timed.rc ]] && e2e_counted "sqlite, time budget" "$reports/results-sqlite-timed.json" "$(cat "$work/e2e_timed.rc")"
else
  failed=$((failed + 1))
fi

echo "== time: every pass's wall and CPU time"
grep -h '^-- [0-9]* s wall' "$work"/*.log

# CI keeps the log's tail: name every failure there, with what it waited
# for and what it saw (scripts/failure-digest.mjs), just above the totals.
if ((failed > 0)); then
  for f in "${stage_failures[@]}"; do echo "✖ $f"; done
  digests=()
  for tap in "$LEASEHOLD_TEST_TAP_DIR"/*.tap; do
    [[ -f $tap ]] && digests+=("$(basename "$tap" .tap)=$tap")
  done
  for run in sqlite postgres sqlite-timed; do
    [[ -f $reports/results-$run.json ]] && digests+=("e2e $run=$reports/results-$run.json")
  done
  node scripts/failure-digest.mjs "${digests[@]}"
fi
echo "$passed passed, $failed failed"
exit "$status"
