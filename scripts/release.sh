#!/usr/bin/env bash
# Prepares a release: every module of the repository is released together,
# with one version. `scripts/release.sh v0.4.0` makes each sub-module
# require the root module (and the modules redlocktest, goredis, rueidis and
# otel, where other modules do) at v0.4.0, moves the go.work replace lines to
# that version, checks that the tree builds, and prints the tags to create
# on the commit that holds these changes.
set -euo pipefail
cd "$(dirname "$0")/.."
new="${1:?usage: scripts/release.sh vX.Y.Z}"
[[ "$new" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "release: $new is not vX.Y.Z" >&2; exit 64; }
mod=github.com/redlockplus/redlock

tags=("$new")
for gomod in $(find . -mindepth 2 -name go.mod | sort); do
  dir="$(dirname "${gomod#./}")"
  for dep in "$mod" "$mod/redlocktest" "$mod/goredis" "$mod/rueidis" "$mod/otel"; do
    old="$(awk -v m="$dep" '$1 == m { print $2 } $1 == "require" && $2 == m { print $3 }' "$gomod")"
    [ -n "$old" ] || continue
    (cd "$dir" && go mod edit -require="$dep@$new")
    sed -i -E "s#^([[:space:]]*(replace[[:space:]]+)?)$dep $old =>#\1$dep $new =>#" go.work
  done
  case "$dir" in
  bench | failover) ;; # never required nor installed by anyone
  *) tags+=("$dir/$new") ;;
  esac
done
go build ./... >/dev/null
go list -m -f '{{.Dir}}' | while read -r dir; do (cd "$dir" && go build ./...); done
echo "release: commit, then tag that commit:"
for tag in "${tags[@]}"; do echo "  git tag $tag"; done
