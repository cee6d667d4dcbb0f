#!/usr/bin/env bash
# Headless Chromium for the page's browser test (tests/bahdanau_tools/serving/test_page.py):
# Debian's chromium and chromium-driver, installed with apt-get when either is missing (`make test`
# runs this first). Where installing is impossible (no apt-get, neither root nor password-less sudo,
# no package server), it says why and goes on: the browser test is then skipped with that reason.
[ -n "${BASH_VERSION:-}" ] || { echo "error: $0 is a bash script, which sh does not run: run it as bash $0" >&2; exit 2; }
set -euo pipefail

if command -v chromium > /dev/null && command -v chromedriver > /dev/null; then
  exit 0
fi
cannot() {
  echo "note: cannot install chromium and chromium-driver ($1): the browser test will be skipped" >&2
  exit 0
}
command -v apt-get > /dev/null || cannot "no apt-get on this system"
if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo > /dev/null && sudo -n true 2> /dev/null; then
  as_root=(sudo -n)
else
  cannot "not root and no password-less sudo; run: sudo apt-get install chromium chromium-driver"
fi
echo "== installing Debian's chromium and chromium-driver for the browser test"
"${as_root[@]}" apt-get update -qq || cannot "apt-get update failed"
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq chromium chromium-driver > /dev/null \
  || cannot "apt-get install failed"
