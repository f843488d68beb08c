#!/usr/bin/env bash
# Simulates a release of this tree and installs the command as a user
# would: `go install github.com/redlockplus/redlock/cmd/redlock@latest`.
#
# The tree (committed or not) is copied into a throwaway git repository and
# tagged the way scripts/release.sh tags a release (v$X for the root module,
# DIR/v$X for every sub-module, $X being the root version that the
# sub-modules require). The go command fetches those tags with git, as it
# does from GitHub, into a file-based module proxy. Then, in an empty GOPATH
# and outside any module or workspace, `go install …@latest` must resolve
# that release, build without any replace directive, and the installed
# binary must report the version from its build info.
#
# It prints one line saying what it simulates and one with the result; the
# go command's output (its "go: downloading" lines) is shown only when a
# step fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
echo "== install-check: a release of this tree, tagged in a throwaway git repository, and \`go install …/cmd/redlock@latest\` from it in an empty GOPATH"
# quiet runs a step with its output in a log, shown if the step fails.
quiet() {
  "$@" >"$work/log" 2>&1 || {
    cat "$work/log" >&2
    echo "install-check: failed: $*" >&2
    exit 1
  }
}

mod=github.com/redlockplus/redlock
version="$(awk -v m="$mod" '$1 == m { print $2 }' "$root/cmd/redlock/go.mod")"
[ -n "$version" ] || { echo "install-check: cmd/redlock/go.mod does not require $mod" >&2; exit 1; }
cache="$(go env GOMODCACHE)/cache/download"
upstream="$(go env GOPROXY)"

# The release: a repository holding this tree, tagged.
mkdir -p "$work/repo"
(cd "$root" && git ls-files -z --cached --others --exclude-standard) |
  (cd "$root" && xargs -0 cp --parents -t "$work/repo" 2>/dev/null || true)
git -C "$work/repo" init -q
git -C "$work/repo" add -A
git -C "$work/repo" -c user.name=release -c user.email=release@localhost commit -qm "release $version"
git -C "$work/repo" tag "$version"
(cd "$work/repo" && find . -mindepth 2 -name go.mod -not -path './bench/*') | while read -r gomod; do
  dir="${gomod#./}"
  git -C "$work/repo" tag "${dir%/go.mod}/$version"
done

# The proxy: the go command fetches the tags with git, as from GitHub.
cat >"$work/gitconfig" <<CONF
[url "file://$work/repo"]
	insteadOf = https://$mod
CONF
quiet env GIT_CONFIG_GLOBAL="$work/gitconfig" GOWORK=off GOFLAGS=-modcacherw \
  GOMODCACHE="$work/publish" GOPROXY=direct GOPRIVATE="$mod" \
  go mod download "$mod@$version" "$mod/otel@$version" "$mod/cmd/redlock@$version"

# The user: an empty GOPATH, no module, no workspace; our modules come from
# the release, every other module from the proxy (the local cache first).
export GOPATH="$work/gopath" GOBIN="$work/bin" GOWORK=off GOFLAGS=-modcacherw
export GOMODCACHE="$work/gopath/pkg/mod"
export GOPROXY="file://$work/publish/cache/download,file://$cache,$upstream"
export GONOSUMDB="$mod"
cd "$work"
quiet go install "$mod/cmd/redlock@latest"
got="$("$work/bin/redlock" --version)"
echo "install-check: go install $mod/cmd/redlock@latest; redlock --version: $got"
case "$got" in
*"$version"*) ;;
*) echo "install-check: --version should report $version" >&2; exit 1 ;;
esac
