#!/usr/bin/env bash
# Unit and HTTP tests: node's test runner (through tsx) over every *.test.ts
# in lib/, components/, server/ and tests/. Node 20 does not expand globs itself, so the
# shell does. Prints node's summary lines (`# pass N`, `# fail N`) last, and
# exits non-zero when any test fails.
set -uo pipefail
shopt -s globstar nullglob
cd "$(dirname "$0")/.."

# The secrets scan of every server log the run wrote goes last (tests/logs/secrets.test.ts).
scan=tests/logs/secrets.test.ts
files=()
for f in lib/**/*.test.ts components/**/*.test.ts server/**/*.test.ts tests/**/*.test.ts; do
  [[ $f == "$scan" ]] || files+=("$f")
done
[[ -f $scan ]] && files+=("$scan")
if ((${#files[@]} == 0)); then
  echo "no unit tests found"
  printf '# tests 0\n# pass 0\n# fail 0\n'
  exit 0
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
trap 'rm -f "$tap"; if [[ -n $own_logs ]]; then rm -rf "$LEASEHOLD_TEST_LOG_DIR"; fi' EXIT

# Readable spec output on the terminal, TAP to a file for the summary lines.
node --import tsx --test --test-concurrency=1 --test-timeout=120000 \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$tap" \
  "${files[@]}"
rc=$?

grep -E '^# (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) ' "$tap"
exit "$rc"
