#!/bin/sh
# Installs Debian's Chromium for the status page browser test
# (test/status/*.browser.test.ts drive /usr/bin/chromium with playwright-core; no
# browser is downloaded from anywhere but the distribution's archive). Does nothing when it is
# already there. Meant for Debian (e.g. a node:*-bookworm CI image): Ubuntu's `chromium` package is
# only a snap wrapper, which does not run in containers.
set -eu

CHROMIUM=/usr/bin/chromium

if [ -x "$CHROMIUM" ]; then
  echo "chromium already installed: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
  exit 0
fi

# Root in CI containers; sudo on a developer's machine.
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

$SUDO apt-get update
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium

if [ ! -x "$CHROMIUM" ]; then
  echo "install-browser: $CHROMIUM is still missing after apt-get install chromium" >&2
  exit 1
fi
echo "chromium installed: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
