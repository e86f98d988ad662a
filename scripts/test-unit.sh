#!/usr/bin/env bash
# Unit and HTTP tests: node's test runner (through tsx) over every *.test.ts
# in lib/, components/, server/, cli/ and tests/. Node 20 does not expand globs itself, so the
# shell does. Prints node's summary lines (`# pass N`, `# fail N`) last, and
# exits non-zero when any test fails.
set -uo pipefail
shopt -s globstar nullglob
cd "$(dirname "$0")/.."

files=(lib/**/*.test.ts components/**/*.test.ts server/**/*.test.ts cli/**/*.test.ts tests/**/*.test.ts)
if ((${#files[@]} == 0)); then
  echo "no unit tests found"
  printf '# tests 0\n# pass 0\n# fail 0\n'
  exit 0
fi

tap="$(mktemp -t leasehold-unit-XXXXXX.tap)"
trap 'rm -f "$tap"' EXIT

# Readable spec output on the terminal, TAP to a file for the summary lines.
node --import tsx --test --test-concurrency=1 --test-timeout=120000 \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$tap" \
  "${files[@]}"
rc=$?

grep -E '^# (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) ' "$tap"
exit "$rc"
