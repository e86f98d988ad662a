#!/usr/bin/env bash
# Debian packages the tests need beyond npm's: Debian's chromium for
# Playwright (never a downloaded browser), a C++ toolchain for
# better-sqlite3, and for the OpenAPI client tests (tests/clients/) Java
# (Swagger Codegen's jar comes from npm), python3 with the libraries the
# generated Python client uses, and Go (golang-go) to compile the generated
# Go client.
# Installs only what is missing, and only as root with apt; otherwise says
# what is missing and leaves it to the caller. Used by `npm test` and .ci/run.
set -uo pipefail
export DEBIAN_FRONTEND=noninteractive

need=()
[[ -x /usr/bin/chromium ]] || need+=(chromium)
if ! command -v make >/dev/null || ! command -v g++ >/dev/null || ! command -v python3 >/dev/null; then
  need+=(build-essential python3)
fi
command -v java >/dev/null || need+=(default-jre-headless)
command -v go >/dev/null || need+=(golang-go)
/usr/bin/python3 -c 'import urllib3, six, certifi, dateutil' 2>/dev/null ||
  need+=(python3 python3-urllib3 python3-six python3-certifi python3-dateutil)
((${#need[@]})) || exit 0

if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  echo "installing: ${need[*]}"
  apt-get update -qq >/dev/null && apt-get install -y -qq "${need[@]}" >/dev/null
else
  echo "missing Debian packages (install them as root): ${need[*]}" >&2
  exit 1
fi
