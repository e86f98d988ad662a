#!/usr/bin/env bash
# Unit and HTTP tests: node's test runner (through tsx), in two passes.
#
# 1. SQLite: every *.test.ts in lib/, components/, server/, cli/ and tests/
#    (engine and store suites run on both stores themselves).
# 2. PostgreSQL: the HTTP-level files again (server/http, the SDK tests
#    against a real server, the command line, the SIGKILL durability test) with
#    LEASEHOLD_TEST_STORE=postgres: each test server is two instances on one
#    fresh database, requests spread over both (docs/design.md "Testing on
#    both stores").
#
# Node 20 does not expand globs itself, so the shell does. Each pass prints
# node's summary lines (`# pass N`, `# fail N`) under its own heading, then
# `postgres pass: N passed, N failed`; exits non-zero when any test fails.
# LEASEHOLD_TEST_PASSES (default "sqlite postgres logs") names the passes
# to run, so LEASEHOLD_TEST_PASSES=sqlite runs one alone;
# LEASEHOLD_TEST_FILES="a.test.ts b.test.ts" runs only those files.
# LEASEHOLD_TEST_TAP_DIR keeps each pass's TAP there as <pass>.tap.
# 3. logs, last: tests/logs/secrets.test.ts scans every server log the
#    passes wrote (LEASEHOLD_TEST_LOG_DIR) for every secret used; passes run
#    side by side (scripts/test.sh) share one LEASEHOLD_TEST_LOG_DIR and
#    run the scan once both are done.
set -uo pipefail
shopt -s globstar nullglob
cd "$(dirname "$0")/.."

passes="${LEASEHOLD_TEST_PASSES:-sqlite postgres logs}"
# The secrets scan of every server log the passes wrote runs last, on its own (tests/logs/secrets.test.ts).
scan=tests/logs/secrets.test.ts
all=()
for f in lib/**/*.test.ts components/**/*.test.ts server/**/*.test.ts cli/**/*.test.ts tests/**/*.test.ts; do
  [[ $f == "$scan" ]] || all+=("$f")
done
# The PostgreSQL pass (two instances per test server): the HTTP, SDK and CLI
# files, less those whose subject does not depend on the store:
# feed-slow.test.ts measures one instance's stream buffering, and on
# PostgreSQL its bursts of 600 concurrent acquires outlast the pool's 4 s
# step deadline on a shared CI machine (retryable 503s, by design); the
# SDK's tarball and its README (package.test.ts), the SDK's types against
# the OpenAPI document (openapi-agreement.test.ts) and the HSTS header
# (hsts.test.ts) are the same whatever the store.
sqlite_only=(server/http/feed-slow.test.ts tests/sdk/package.test.ts tests/sdk/openapi-agreement.test.ts server/http/hsts.test.ts)
http=()
for f in server/http/*.test.ts tests/sdk/*.test.ts tests/cli/*.test.ts server/durability.test.ts; do
  [[ " ${sqlite_only[*]} " == *" $f "* ]] || http+=("$f")
done
# LEASEHOLD_TEST_FILES (space-separated) runs only those files, in whichever passes run (scripts/flake-hunt.sh).
if [[ -n ${LEASEHOLD_TEST_FILES:-} ]]; then
  read -r -a all <<<"$LEASEHOLD_TEST_FILES"
  http=("${all[@]}")
fi

tap="$(mktemp -t leasehold-unit-XXXXXX.tap)"
# Every test server's log, request lines included, for the secrets scan.
# Set LEASEHOLD_TEST_LOG_DIR to keep them; else they go with the run.
own_logs=
if [[ -z ${LEASEHOLD_TEST_LOG_DIR:-} ]]; then
  LEASEHOLD_TEST_LOG_DIR="$(mktemp -d -t leasehold-test-logs-XXXXXX)"
  own_logs=1
fi
export LEASEHOLD_TEST_LOG_DIR
# Each pass's bundles (scripts/build-tests.mjs), removed at exit.
builds=()
trap 'rm -f "$tap"; rm -rf "${builds[@]}"; rmdir .test-build 2>/dev/null; if [[ -n $own_logs ]]; then rm -rf "$LEASEHOLD_TEST_LOG_DIR"; fi' EXIT

status=0
# run <label> <files…>: readable spec output on the terminal, TAP to a file for the summary lines.
run() {
  local label=$1
  shift
  if (($# == 0)); then
    echo "no tests found for the $label pass"
    printf '# tests 0\n# pass 0\n# fail 0\n'
    return
  fi
  # Node 20 applies --test-timeout to each file as a whole too, not only to
  # its tests: the CLI files run a process per command and, on a loaded
  # machine, take over two minutes. A hung test still ends in 5 minutes;
  # the harness's own waits (server/testing/wait.ts) fail long before that.
  # LEASEHOLD_TEST_CONCURRENCY (default 1) runs that many files at once
  # (docs/design.md "Flake hunting": what it saves and what it risks).
  # The files run as bundles (scripts/build-tests.mjs: no TypeScript compiled
  # in each test process, failures still located in the .ts sources);
  # LEASEHOLD_TEST_BUNDLE=0 runs them through tsx instead.
  local loader=(--import tsx) files=("$@")
  if [[ ${LEASEHOLD_TEST_BUNDLE:-1} != 0 ]]; then
    local out=".test-build/$label-$$"
    builds+=("$out")
    if ! node scripts/build-tests.mjs "$out" "$@"; then
      echo "building the $label pass's test files failed" >&2
      printf '# tests 0\n# pass 0\n# fail 1\n' | tee "$tap"
      status=1
      return 0
    fi
    loader=(--enable-source-maps)
    files=()
    local f
    for f in "$@"; do files+=("$out/${f%.ts*}.mjs"); done
  fi
  node "${loader[@]}" --test --test-concurrency="${LEASEHOLD_TEST_CONCURRENCY:-1}" --test-timeout=300000 \
    --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$tap" \
    "${files[@]}"
  local rc=$?
  echo "== $label pass summary"
  grep -E '^# (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) ' "$tap"
  # scripts/test.sh digests each pass's failures at the end of the log.
  [[ -n ${LEASEHOLD_TEST_TAP_DIR:-} ]] && mkdir -p "$LEASEHOLD_TEST_TAP_DIR" && cp "$tap" "$LEASEHOLD_TEST_TAP_DIR/$label.tap"
  ((rc != 0)) && status=1
  return 0
}

for pass in $passes; do
  case $pass in
    sqlite) run sqlite "${all[@]}" ;;
    postgres)
      LEASEHOLD_TEST_STORE=postgres run postgres "${http[@]}"
      awk '/^# pass /{p=$3} /^# (fail|cancelled) /{f+=$3} END{printf "postgres pass: %d passed, %d failed\n", p, f}' "$tap"
      ;;
    logs) [[ -f $scan ]] && run logs "$scan" ;;
    *) echo "unknown pass: $pass (sqlite, postgres or logs)" >&2; status=2 ;;
  esac
done
exit "$status"
