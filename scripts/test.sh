#!/usr/bin/env bash
# The test command. Installs what the tests need when it is missing
# (redis-server, redis-tools and redis-sentinel with apt, as root or through
# sudo; staticcheck with go install), then, for every module of go.work
# (root, redlocktest, failover, otel, cmd/redlock, bench, sdltest, ...):
# gofmt, go vet, staticcheck and its tests under the race detector, each
# package's TestMain checking for leaked goroutines. Before the tests it
# checks that the root module gained no dependency (scripts/deps-check.sh),
# that every go.mod of the tree is in go.work and that each module requires
# the versions the workspace builds it with, and model-checks the protocol
# with spin (scripts/model-check.sh, which installs spin with apt when it
# is missing; under a minute, beside vet and staticcheck; not with --quick
# or TEST_MODULES); after them, that `go install …/cmd/redlock@latest`
# works on a simulated release (scripts/install-check.sh).
#
# Output: an "ok" line per package, the whole output of every failed test,
# one line per scenario of the failover suite as it ends, and last
#
#	test.sh: 9 modules, 52 packages, 1234 passed, 0 failed, 7 skipped in 8m12s
#
# (tests and subtests counted alike). It exits non-zero when anything
# failed; every module is tested first.
#
#	bash scripts/test.sh           everything, as CI runs it (.ci/run)
#	bash scripts/test.sh --quick   the root module only: vet and its tests
#	TEST_MODULES="otel cmd/redlock" bash scripts/test.sh
#	                               the checks, then those modules only
#
# Other arguments go to every `go test` (e.g. -run TestX, -short).
#
# The failover suite uses Docker when an engine answers (it builds its Redis
# image from the local redis-server, no registry needed) and local processes
# otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
staticcheck_version=v0.8.2
start=$SECONDS
quick=0
if [ "${1:-}" = "--quick" ]; then
  quick=1
  shift
fi

need_pkgs=()
command -v redis-server >/dev/null 2>&1 || need_pkgs+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need_pkgs+=(redis-tools) # creates the Redis Cluster of the cluster tests
command -v redis-sentinel >/dev/null 2>&1 || need_pkgs+=(redis-sentinel)
command -v gcc >/dev/null 2>&1 || need_pkgs+=(gcc) # builds the clock shim of the node guard's tests
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "installing ${need_pkgs[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi
staticcheck="$(go env GOPATH)/bin/staticcheck"
if [ "$quick" -eq 0 ] && ! "$staticcheck" -version 2>/dev/null | grep -q "${staticcheck_version#v}"; then
  echo "installing staticcheck $staticcheck_version"
  GOWORK=off GOFLAGS= go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version"
fi

# The failover suite prefers Docker; start the engine if it is installed but
# not running (the suite falls back to local processes otherwise).
if [ "$quick" -eq 0 ] && command -v docker >/dev/null 2>&1 && ! docker info >/dev/null 2>&1; then
  (service docker start || true) >/dev/null 2>&1
fi

work="$(mktemp -d)"
trap 'wait; rm -rf "$work"' EXIT # wait: the model check may still run (below)
# testreport turns `go test -json` into the output described above.
go build -o "$work/testreport" ./internal/testkit/testreport
summary() {
  "$work/testreport" -summary "$work/counts" -modules "$1" -elapsed "$((SECONDS - start))s"
}

label() { [ "$1" = "$PWD" ] && echo "root module" || echo "${1#"$PWD"/}"; }

# test_module DIR [go test flags]: the tests of one module, reported;
# a failure is remembered, and the next module runs.
failed=0
test_module() {
  local dir="$1" progress=""
  shift
  # The failover suite runs for minutes: one line per scenario as it ends.
  case "$dir" in */failover) progress="-progress" ;; esac
  echo "== test: $(label "$dir")"
  (cd "$dir" && go test -json "$@" ./...) | "$work/testreport" ${progress:+"$progress"} -state "$work/counts" || failed=1
}

if [ "$quick" -eq 1 ]; then
  echo "== vet: root module"
  go vet -race ./...
  test_module "$PWD" -race -count=1 -timeout 15m "$@"
  summary 1 || failed=1
  exit "$failed"
fi

bash scripts/deps-check.sh

modules="$(go list -m -f '{{.Dir}}')"
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

# The model check (under a minute of one core) runs beside vet and
# staticcheck, which leave a core idle while they wait on the compiler; its
# output follows theirs.
model_pid=""
if [ -z "${TEST_MODULES:-}" ]; then
  bash scripts/model-check.sh >"$work/model-check.log" 2>&1 &
  model_pid=$!
fi

unformatted="$(gofmt -l .)"
[ -z "$unformatted" ] || { echo "test.sh: not gofmt'ed: $unformatted" >&2; exit 1; }

# TEST_MODULES narrows the vet and tests to some modules, named by their
# directory ("." for the root module); the install check then is skipped.
if [ -n "${TEST_MODULES:-}" ]; then
  chosen=""
  for m in $TEST_MODULES; do
    dir="$(cd "$m" 2>/dev/null && pwd)" && grep -qxF "$dir" <<<"$modules" ||
      { echo "test.sh: TEST_MODULES: $m is not a module of go.work" >&2; exit 1; }
    chosen+="$dir"$'\n'
  done
  modules="$chosen"
fi

count=0
for dir in $modules; do
  # Vetted with the flags its tests build with, so that the tests reuse
  # the packages that vet compiled: with an empty build cache, compiling
  # every dependency once more for the race detector took two minutes.
  race=-race
  case "$dir" in */bench) race="" ;; esac
  echo "== vet and staticcheck: $(label "$dir")"
  (cd "$dir" && go vet $race ./... && GOFLAGS="${GOFLAGS:+$GOFLAGS }$race" "$staticcheck" ./...)
  count=$((count + 1))
done

if [ -n "$model_pid" ]; then
  echo "== model check"
  wait "$model_pid" || failed=1 # it says what failed; the Go tests run all the same
  cat "$work/model-check.log"
fi

for dir in $modules; do
  case "$dir" in
  # The benchmark tool's tests run it briefly; the race detector would make
  # its figures and its time limits meaningless.
  */bench) test_module "$dir" -count=1 -timeout 5m "$@" ;;
  *) test_module "$dir" -race -count=1 -timeout 15m "$@" ;;
  esac
done

if [ -z "${TEST_MODULES:-}" ]; then
  bash scripts/install-check.sh || failed=1
fi
summary "$count" || failed=1
exit "$failed"
