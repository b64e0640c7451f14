#!/usr/bin/env bash
# The browser test (tests/test_browser.py) drives Debian's Chromium through Playwright;
# it never downloads a browser. Install Debian's chromium if it is missing (CI runs as
# root on a fresh Debian machine). If it cannot be installed, say so and carry on: the
# browser test then skips with that reason, and the rest of `make test` still runs.
set -uo pipefail
if [ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian's chromium for the browser test..."
  if apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
       apt-get install -y -qq chromium fonts-dejavu-core >/dev/null; then
    echo "chromium installed: $(/usr/bin/chromium --version 2>/dev/null)"
    exit 0
  fi
  echo "Could not install chromium with apt-get; the browser test will be skipped." >&2
else
  echo "chromium is missing: install it (e.g. 'sudo apt-get install chromium');" \
       "the browser test will be skipped." >&2
fi
exit 0
