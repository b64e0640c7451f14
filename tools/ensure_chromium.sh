#!/usr/bin/env bash
# The browser test drives Debian's Chromium (no browser download). Install it if missing.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian's chromium for the browser test..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core >/dev/null
else
  echo "chromium is missing: install it (e.g. 'sudo apt-get install chromium'); the browser test will be skipped." >&2
fi
