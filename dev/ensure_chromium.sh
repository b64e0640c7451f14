#!/usr/bin/env bash
# The browser test (tests/test_browser.py) drives Debian's Chromium through Playwright;
# it never downloads a browser. Install Debian's chromium if it is missing (CI runs as
# root on a fresh Debian machine), and a CJK font (Noto CJK) so that the Chinese pages
# render as characters, not boxes. If they cannot be installed, say so and carry on: the
# browser test then skips (or, for the font, fails) with that reason.
set -uo pipefail
packages=()
if ! { [ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1; }; then
  packages+=(chromium fonts-dejavu-core)
fi
if ! fc-list :lang=zh 2>/dev/null | grep -q .; then
  packages+=(fonts-noto-cjk)
fi
[ ${#packages[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian's ${packages[*]} for the browser test..."
  if apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
       apt-get install -y -qq "${packages[@]}" >/dev/null; then
    echo "installed: ${packages[*]}"
    exit 0
  fi
  echo "Could not install ${packages[*]} with apt-get; the browser test will say so." >&2
else
  echo "missing: ${packages[*]} (e.g. 'sudo apt-get install ${packages[*]}');" \
       "the browser test will say so." >&2
fi
exit 0
