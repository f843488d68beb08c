#!/usr/bin/env bash
# The test command. Installs what the tests need when it is missing
# (redis-server, redis-tools and redis-sentinel with apt, as root or through
# sudo; staticcheck with go install), then, for every module of go.work
# (root, redlocktest, failover, otel, cmd/redlock, bench, sdltest): gofmt, go vet,
# staticcheck and its tests under the race detector, each package's
# TestMain checking for leaked goroutines. Before the tests it checks that
# the root module gained no dependency (scripts/deps-check.sh), that every
# go.mod of the tree is in go.work and that each module requires the
# versions the workspace builds it with, and model-checks the protocol
# with spin (scripts/model-check.sh, which installs spin with apt when it
# is missing; about a minute); after them, that
# `go install …/cmd/redlock@latest` works on a simulated release
# (scripts/install-check.sh). Arguments go to every `go test`.
#
# The failover suite uses Docker when an engine answers (it builds its Redis
# image from the local redis-server, no registry needed) and local processes
# otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
staticcheck_version=v0.8.2

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
staticcheck="$(go env GOPATH)/bin/staticcheck"
if ! "$staticcheck" -version 2>/dev/null | grep -q "${staticcheck_version#v}"; then
  echo "installing staticcheck $staticcheck_version"
  GOWORK=off GOFLAGS= go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version"
fi

# The failover suite prefers Docker; start the engine if it is installed but
# not running (the suite falls back to local processes otherwise).
if command -v docker >/dev/null 2>&1 && ! docker info >/dev/null 2>&1; then
  (service docker start || true) >/dev/null 2>&1
fi

bash scripts/deps-check.sh

modules="$(go list -m -f '{{.Dir}}')"
label() { [ "$1" = "$PWD" ] && echo "root module" || echo "${1#"$PWD"/}"; }
for gomod in $(find "$PWD" -name go.mod -not -path '*/testdata/*'); do
  grep -qxF "$(dirname "$gomod")" <<<"$modules" ||
    { echo "test.sh: $(dirname "$gomod") has a go.mod but is not in go.work" >&2; exit 1; }
done

# The workspace builds each module with the highest version that any module
# requires; a released module gets what it requires itself. They must agree,
# or CI would test other dependencies than users get.
selected="$(go list -m -f '{{.Path}} {{.Version}}' all)"
for dir in $modules; do
  awk '/^require \(/ { b = 1; next } b && /^\)/ { b = 0; next } b && NF { print $1, $2 }
    /^require [^(]/ { print $2, $3 }' "$dir/go.mod" | while read -r path version; do
    got="$(awk -v p="$path" '$1 == p { print $2 }' <<<"$selected")"
    # (a module of the workspace has no version: it is this tree)
    if [ -n "$got" ] && [ "$got" != "$version" ]; then
      echo "test.sh: $(label "$dir") requires $path $version, but the workspace builds it with $got: require $got" >&2
      exit 1
    fi
  done
done

echo "== model check"
bash scripts/model-check.sh

unformatted="$(gofmt -l .)"
[ -z "$unformatted" ] || { echo "test.sh: not gofmt'ed: $unformatted" >&2; exit 1; }
for dir in $modules; do
  echo "== vet and staticcheck: $(label "$dir")"
  (cd "$dir" && go vet ./... && "$staticcheck" ./...)
done

for dir in $modules; do
  echo "== test: $(label "$dir")"
  case "$dir" in
  # The benchmark tool's tests run it briefly; the race detector would make
  # its figures and its time limits meaningless.
  */bench) (cd "$dir" && go test -count=1 -timeout 5m "$@" ./...) ;;
  *) (cd "$dir" && go test -race -count=1 -timeout 15m "$@" ./...) ;;
  esac
done

bash scripts/install-check.sh
