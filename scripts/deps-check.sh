#!/usr/bin/env bash
# Fails if the root module gains a dependency. A program that imports only
# the lock (github.com/redlockplus/redlock) and sdlstore may have in its
# module graph nothing but redigo and the modules it requires itself. Two
# checks:
#  1. the root go.mod requires redigo and nothing else;
#  2. a throwaway consumer that imports both packages has the module graph
#     (`go list -m all`) of a module that imports only redigo at the same
#     version, plus this module.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mod=github.com/redlockplus/redlock
allowed=(github.com/gomodule/redigo)
export GOWORK=off GOFLAGS=-mod=mod

fail=0
required="$(awk '/^require \(/ { b = 1; next } b && /^\)/ { b = 0; next }
  b && NF { print $1 } /^require [^(]/ { print $2 }' "$root/go.mod")"
for path in $required; do
  case " ${allowed[*]} " in
  *" $path "*) ;;
  *) echo "deps-check: the root go.mod requires $path; it may require only ${allowed[*]}" >&2; fail=1 ;;
  esac
done
[ "$fail" -eq 0 ] || exit 1

work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
version_of() { awk -v m="$1" '$1 == m { print $2 } $1 == "require" && $2 == m { print $3 }' "$root/go.mod"; }

# The baseline: redigo alone, at the root module's version.
mkdir -p "$work/base" "$work/consumer"
cat >"$work/base/main.go" <<'GO'
package main

import _ "github.com/gomodule/redigo/redis"

func main() {}
GO
(cd "$work/base" && go mod init example.com/base >/dev/null 2>&1 &&
  for path in "${allowed[@]}"; do go mod edit -require="$path@$(version_of "$path")"; done &&
  go mod tidy >/dev/null 2>&1 && go list -m all | tail -n +2 | sort) >"$work/base.txt"

# The consumer: imports the lock and sdlstore from this tree.
cat >"$work/consumer/main.go" <<GO
package main

import (
	_ "$mod"
	_ "$mod/sdlstore"
)

func main() {}
GO
(cd "$work/consumer" && go mod init example.com/consumer >/dev/null 2>&1 &&
  go mod edit -require="$mod@v0.0.0" -replace="$mod=$root" &&
  go mod tidy >/dev/null 2>&1 && go list -m all | tail -n +2 | sort) >"$work/consumer.txt"

extra="$(grep -v "^$mod " "$work/consumer.txt" | comm -23 - "$work/base.txt")"
if [ -n "$extra" ]; then
  echo "deps-check: a program importing only $mod and $mod/sdlstore gets these modules beyond redigo's:" >&2
  echo "$extra" >&2
  exit 1
fi
echo "deps-check: a consumer of $mod and sdlstore has $(wc -l <"$work/consumer.txt") modules in its graph (go.sum $(wc -l <"$work/consumer/go.sum") lines): $(tr '\n' ' ' <"$work/consumer.txt")"
