#!/usr/bin/env bash
# `go mod tidy` for every module of go.work. A sub-module requires the root
# module (and maybe redlocktest) at a version that may not be published
# yet, and go mod tidy does not read go.work; so each module is tidied with
# temporary replace directives pointing at this tree, removed again after.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
mod=github.com/redlockplus/redlock
# Every module of the tree: path and directory.
mapfile -t paths < <(go list -m -f '{{.Path}}')
mapfile -t dirs < <(go list -m -f '{{.Dir}}')
# Twice: a module's tidy reads the go.mod of the modules it requires, which
# the first pass may have changed after it.
for dir in "${dirs[@]}" "${dirs[@]}"; do
  cd "$dir"
  replaced=()
  for i in "${!paths[@]}"; do
    [ "${dirs[$i]}" = "$dir" ] && continue
    if awk -v m="${paths[$i]}" '$1 == m || ($1 == "require" && $2 == m) { found = 1 } END { exit !found }' go.mod; then
      go mod edit -replace="${paths[$i]}=${dirs[$i]}"
      replaced+=("${paths[$i]}")
    fi
  done
  status=0
  GOWORK=off go mod tidy || status=$?
  for path in "${replaced[@]}"; do go mod edit -dropreplace="$path"; done
  [ "$status" -eq 0 ] || { echo "tidy: ${dir#"$root"/} failed" >&2; exit "$status"; }
done
echo "tidy: ${#dirs[@]} modules tidied ($mod and its sub-modules)"
