#!/usr/bin/env bash
# Installs what the tests need (redis-server, redis-sentinel) when it is
# missing, then runs every test of the module under the race detector with
# the goroutine-leak checks of each package's TestMain, and the smoke test
# of the benchmark tool (its own module, bench/). The failover suite uses
# Docker when an engine answers (it builds its Redis image from the local
# redis-server, no registry needed) and local processes otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
command -v redis-server >/dev/null 2>&1 || need_pkgs+=(redis-server redis-tools)
command -v redis-sentinel >/dev/null 2>&1 || need_pkgs+=(redis-sentinel)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "installing ${need_pkgs[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

# The failover suite prefers Docker; start the engine if it is installed but
# not running (the suite falls back to local processes otherwise).
if command -v docker >/dev/null 2>&1 && ! docker info >/dev/null 2>&1; then
  (service docker start || true) >/dev/null 2>&1
fi

go vet ./...
go test -race -count=1 -timeout 15m "$@" ./...
(cd bench && go vet ./... && go test -count=1 -timeout 5m ./...)
