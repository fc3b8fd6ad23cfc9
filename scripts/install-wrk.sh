#!/bin/sh
# Installs Debian's wrk, the load generator of the receiver and Probot benchmarks (bench/wrk.ts says
# why not autocannon) and of test/bench/wrk.test.ts, which drives its Lua scripts for real. Does
# nothing when it is already there.
set -eu

if command -v wrk >/dev/null 2>&1; then
  echo "wrk already installed: $(command -v wrk)"
  exit 0
fi

# Root in CI containers; sudo on a developer's machine.
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

$SUDO apt-get update
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends wrk

if ! command -v wrk >/dev/null 2>&1; then
  echo "install-wrk: wrk is still missing after apt-get install wrk" >&2
  exit 1
fi
echo "wrk installed: $(command -v wrk)"
