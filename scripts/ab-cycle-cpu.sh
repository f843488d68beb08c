#!/usr/bin/env bash
# Compares the client CPU of a W2 lock cycle between two builds of the root
# module, on one machine, in interleaved runs: BenchmarkW2CycleCPU measures
# the lock's CPU per cycle over the pipelined floor's in the same process
# (bench_test.go), and this script alternates the two builds' test binaries
# RUNS times each, so that the machine's drift falls on both alike. It
# prints every run's ratio, then each build's mean and standard error.
#
#	bash scripts/ab-cycle-cpu.sh BASE [NEW] [RUNS]
#
# BASE and NEW are git revisions (NEW defaults to the working tree, with
# its uncommitted changes; RUNS to 6). A run takes about 35 s on 2 cores,
# so the default takes 7 minutes. On the 2-core machines of BENCHMARKS.md
# one build's ratios spread by about +-0.03 between runs (0.3 µs of a
# cycle) on step 19's Intel machine and +-0.06 on step 20's AMD one: a
# difference is worth quoting when it is several standard errors wide.
# Run nothing else meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: ab-cycle-cpu.sh BASE [NEW] [RUNS]}
new=${2:-}
runs=${3:-6}
command -v redis-server >/dev/null || { echo "ab-cycle-cpu.sh: redis-server is missing (bash scripts/test.sh installs it)" >&2; exit 1; }
work=$(mktemp -d)
cleanup() {
  for d in "$work"/tree-*; do
    [ -d "$d" ] && git worktree remove --force "$d" >/dev/null 2>&1
  done
  rm -rf "$work"
}
trap cleanup EXIT

# binary builds the root package's test binary of revision $1 (the working
# tree when empty) as $work/$2.test.
binary() {
  local dir=.
  if [ -n "$1" ]; then
    dir="$work/tree-$2"
    git worktree add --detach "$dir" "$1" >/dev/null 2>&1
  fi
  (cd "$dir" && go test -c -o "$work/$2.test" .)
}
binary "$base" base
binary "$new" new
label_new=${new:-"working tree"}

for i in $(seq "$runs"); do
  for b in base new; do
    line=$("$work/$b.test" -test.run '^$' -test.bench '^BenchmarkW2CycleCPU$' -test.benchtime 8x | grep '^BenchmarkW2CycleCPU')
    ratio=$(awk '{for (i = 1; i < NF; i++) if ($(i+1) == "ratio") print $i}' <<<"$line")
    echo "run $i $b ratio $ratio"
  done
done | tee "$work/runs.txt"

awk -v base="$base" -v new="$label_new" '
  { n[$3]++; s[$3] += $5; q[$3] += $5 * $5 }
  END {
    for (b in n) {
      m = s[b] / n[b]
      v = n[b] > 1 ? (q[b] - n[b] * m * m) / (n[b] - 1) : 0
      printf "%s (%s): mean ratio %.3f, standard error %.3f over %d runs\n", b, (b == "base" ? base : new), m, sqrt(v > 0 ? v : 0) / sqrt(n[b]), n[b]
    }
  }' "$work/runs.txt"
