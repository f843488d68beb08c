#!/usr/bin/env bash
# Checks the model of the protocol (model/redlock.pml) and of the rounds'
# clock (model/roundclock.pml, the lines whose name starts with "clock")
# with spin: every configuration below must hold every property it checks,
# every negative control (a variant with a planted bug) must violate the
# very property it protects, and every witness must reach the situation
# it asks about (so that the bounds leave the properties something to
# check). One line per run: the configuration, the property, the result,
# the states explored and the time (spin -a, gcc and the search). Exits 0
# only when every run went as expected. Installs spin with apt (as root or
# through sudo) when it is missing. pan and any trail are built in a
# temporary directory, removed on exit (MODEL_CHECK_KEEP=1 keeps it and
# prints where).
#
# Usage: scripts/model-check.sh [filter]   runs only the lines whose
# configuration contains the string filter.
set -euo pipefail
cd "$(dirname "$0")/.."
filter="${1:-}"

if ! command -v spin >/dev/null 2>&1; then
  echo "installing spin"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq spin >/dev/null
fi
command -v gcc >/dev/null 2>&1 || { echo "model-check.sh: gcc is needed to build pan" >&2; exit 1; }

work="$(mktemp -d)"
if [ -n "${MODEL_CHECK_KEEP:-}" ]; then
  trap 'echo "model-check.sh: kept $work"' EXIT
else
  trap 'rm -rf "$work"' EXIT
fi
cp model/*.pml "$work/"

# Configurations (model/README.md and docs/SAFETY.md give the bounds).
# Defaults of the model: TTL 3 ticks, drift allowance 1, every node clock
# fast by 1, one restart away for a TTL, one SET or delete delivered late
# or never, one tick inside an acquire round, one attempt per client, one
# extension per holding.
GUARD="-DRESTART_GUARD -DCLOCK_GUARD -DEXTEND_GUARD -DRESTART_IMMEDIATE"
STEP="-DMAXSTEP=1"
FENCE="-DFENCING -DMAXEXT=0 -DDELAY_DEL=0"
SKEW="-DSKEW=1 -DSKEWED=1"
ALL="mutual_exclusion fence_order release_own_key"
only() { # the -D flags that turn off every property but $1
  for p in $ALL; do [ "$p" = "$1" ] || printf ' -DNO_CHECK_%s' "$p"; done
}

runs=0 failed=0
start_all=$(date +%s.%N)

# check NAME EXPECT OPT FLAGS...: EXPECT is "holds" (of the properties in
# $CHECKS), "violates PROPERTY" or "reaches"; OPT the gcc optimisation (Og
# pays for its longer build on the big searches only); $MODEL the model
# (default redlock.pml). A blocked process at the end of a run is the
# property end_state.
check() {
  local name="$1" expect="$2" opt="$3"
  shift 3
  if [ -n "$filter" ] && ! grep -qF -- "$filter" <<<"$name"; then return 0; fi
  runs=$((runs + 1))
  local t0 t1 out got states secs result ok=1 prop="" errors hash=20 model="${MODEL:-redlock.pml}"
  [ "$opt" = O0 ] || hash=24
  t0=$(date +%s.%N)
  out="$work/pan.out"
  (
    cd "$work"
    rm -f pan pan.* ./*.trail
    spin -a "$@" "$model" >spin.out 2>&1 || { cat spin.out; exit 1; }
    gcc "-$opt" -DSAFETY -DNOBOUNDCHECK -DSFH -w -o pan pan.c
    ./pan -m100000 -w$hash >"$out" 2>&1 || true
  ) >"$work/build.out" 2>&1 || { ok=0; }
  t1=$(date +%s.%N)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1fs", b - a }')
  states=$(awk '/states, stored/ { print $1 }' "$out" 2>/dev/null || true)
  got=$(grep -oE 'assertion violated \(+[a-z_]+' "$out" 2>/dev/null | sed 's/.*(//' | head -1 || true)
  if [ -z "$got" ] && grep -q 'invalid end state' "$out" 2>/dev/null; then got=end_state; fi
  errors=$(grep -oE 'errors: [0-9]+' "$out" 2>/dev/null | awk '{ print $2 }' || true)
  if [ "$ok" -eq 0 ] || [ -z "$errors" ]; then
    result="BUILD OR SEARCH FAILED"; ok=0
    sed 's/^/    /' "$work/build.out" "$out" 2>/dev/null | head -20 >&2 || true
  elif grep -qiE 'max search depth too small|out of memory|search not completed' "$out" &&
    [ "$errors" -eq 0 ]; then
    result="INCOMPLETE SEARCH"; ok=0
  else
    case "$expect" in
    holds)
      prop="$CHECKS"
      if [ "$errors" -eq 0 ]; then result="holds"; else result="VIOLATED ($got)"; ok=0; fi
      ;;
    "violates "*)
      prop="${expect#violates }"
      if [ "$errors" -gt 0 ] && [ "$got" = "$prop" ]; then
        result="violated, as expected"
      elif [ "$errors" -gt 0 ]; then
        result="WRONG PROPERTY VIOLATED ($got)"; ok=0
      else
        result="NOT VIOLATED (the control found no counterexample)"; ok=0
      fi
      ;;
    reaches)
      prop="witness"
      if [ "$errors" -gt 0 ] && [ "$got" = "witness" ]; then
        result="reached"
      elif [ "$errors" -gt 0 ]; then
        result="VIOLATED ($got)"; ok=0
      else
        result="NOT REACHED"; ok=0
      fi
      ;;
    esac
  fi
  printf '%-58s %-44s %-24s %10s states %7s\n' "$name" "$prop" "$result" "${states:-?}" "$secs"
  if [ "$ok" -eq 0 ]; then
    failed=$((failed + 1))
    if [ -f "$work/$model.trail" ]; then
      if [ -n "${MODEL_CHECK_KEEP:-}" ]; then
        cp "$work/$model.trail" "$work/run$runs.trail"
        echo "    replay: cd $work && cp run$runs.trail $model.trail && spin -t -p $* $model" >&2
      else
        echo "    to replay the trail: MODEL_CHECK_KEEP=1 bash scripts/model-check.sh '$name'" >&2
      fi
    fi
  fi
}

echo "model check: $(spin -V | awk '{ print $1, $3 }'), model/redlock.pml and model/roundclock.pml"

# Every property, exhaustively, within the bounds of each configuration.
MUTEX="mutual_exclusion release_own_key"
CHECKS="$MUTEX" check "mutex N=3 C=2, unguarded" holds O0
CHECKS="$MUTEX" check "mutex N=3 C=2, 2 attempts each, unguarded, no slow round" holds Og -DATT=2 -DMAXSLOW=0
CHECKS="$MUTEX" check "mutex N=3 C=2, guarded, immediate restart, clock step" holds Og $GUARD $STEP
CHECKS="$MUTEX" check "mutex N=3 C=2, restart guard, window = validity" holds O0 -DRESTART_GUARD -DRESTART_IMMEDIATE -DWINDOW=2
CHECKS="$MUTEX" check "mutex N=5 C=2, unguarded" holds Og -DN=5
CHECKS="$MUTEX" check "mutex N=3 C=3, unguarded, no slow round" holds Og -DC=3 -DMAXSLOW=0
CHECKS="$ALL" check "fencing N=3 C=2, unguarded, a node 1 tick ahead, TTL 4" holds Og $FENCE $SKEW -DTTL=4
CHECKS="$ALL" check "fencing N=3 C=2, guarded, immediate restart" holds Og $FENCE $GUARD
CHECKS="$ALL" check "fencing N=3 C=2, guarded, clock step, no late message" holds Og $FENCE $GUARD $STEP -DMAXDELAY=0
CHECKS="$ALL" check "fencing N=3 C=3, a node 1 tick ahead, no restart" holds O0 $FENCE $SKEW -DC=3 -DMAXRESTART=0 -DMAXDELAY=0
CHECKS="$ALL" check "fencing N=5 C=2, unguarded, no late message" holds O0 $FENCE -DN=5 -DMAXDELAY=0
CHECKS="$ALL" check "fencing, guarded, absolute clock to 5, no slow round" holds Og $FENCE $GUARD -DABSTIME -DTMAX=5 -DMAXSLOW=0

# Negative controls: each planted bug must break the property it protects.
check "control: quorum N/2" "violates mutual_exclusion" O0 -DQUORUM=N/2 $(only mutual_exclusion)
check "control: no drift allowance, fast node clocks" "violates mutual_exclusion" O0 -DDRIFT_ALLOW=0 $(only mutual_exclusion)
check "control: fencing without the write-back (one-round max)" "violates fence_order" O0 $FENCE -DNO_WRITEBACK -DMAXRESTART=0 $(only fence_order)
check "control: fencing without the TIME seed, immediate restart" "violates fence_order" O0 $FENCE $GUARD -DNO_SEED -DABSTIME -DTMAX=5 $(only fence_order)
check "control: immediate empty restart without the guard" "violates mutual_exclusion" O0 -DRESTART_IMMEDIATE $(only mutual_exclusion)
check "control: clock step without the clock guard" "violates mutual_exclusion" O0 -DRESTART_GUARD -DRESTART_IMMEDIATE $STEP $(only mutual_exclusion)
check "control: release with a plain DEL" "violates release_own_key" O0 -DPLAIN_DEL $(only release_own_key)
check "control: validity without the elapsed time" "violates mutual_exclusion" O0 -DNO_ELAPSED $(only mutual_exclusion)
check "control: clock guard on attempts only, not extensions" "violates mutual_exclusion" O0 -DRESTART_GUARD -DCLOCK_GUARD -DRESTART_IMMEDIATE $STEP -DMAXRESTART=0 $(only mutual_exclusion)
check "control: clock guard allowance + rate drift > drift allow." "violates mutual_exclusion" O0 $GUARD $STEP -DCLOCK_ALLOW=1 $(only mutual_exclusion)
check "control: clock guard allowance + clock skew > drift allow." "violates mutual_exclusion" O0 $GUARD $STEP -DCLOCK_ALLOW=1 -DFAST=0 -DCSKEW=1 -DSTEPMAX=3 -DMAXDELAY=0 -DMAXRESTART=0 $(only mutual_exclusion)
check "control: holder acts until it releases (a pause)" "violates mutual_exclusion" O0 -DUNTIL_RELEASE $(only mutual_exclusion)
check "control: restart guard window below the validity" "violates mutual_exclusion" O0 -DRESTART_GUARD -DRESTART_IMMEDIATE -DWINDOW=1 $(only mutual_exclusion)
check "control: fencing, immediate restart without the guard" "violates fence_order" O0 $FENCE -DRESTART_IMMEDIATE $(only fence_order)

# Witnesses: the configurations above do get to what they are meant to cover.
check "witness: guarded, a restarted node's grant counted again" reaches O0 $GUARD $STEP -DWITNESS=2
check "witness: guarded, a holding after a clock step" reaches O0 $GUARD $STEP -DWITNESS=3
check "witness: guarded, a holding after an extension" reaches O0 $GUARD $STEP -DWITNESS=5
check "witness: fencing guarded, a restarted node's grant counted" reaches O0 $FENCE $GUARD -DWITNESS=2
check "witness: fencing guarded, a token from the write-back" reaches O0 $FENCE $GUARD -DWITNESS=4

# The rounds' clock: every generation a round takes is closed, although
# the sweeper ends when idle; the control ends it without looking again.
MODEL=roundclock.pml CHECKS="end_state" check "clock: 2 rounds, 3 takes each" holds O0
MODEL=roundclock.pml check "clock control: sweeper ends without a second look" "violates end_state" O0 -DNO_RECHECK -DTAKES=2
MODEL=roundclock.pml CHECKS="end_state" check "clock: 2 rounds, 2 takes each, Close" holds O0 -DCLOSE -DTAKES=2
MODEL=roundclock.pml check "clock control: take ignores a closing owner" "violates end_state" O0 -DCLOSE -DNO_DYING_CHECK -DTAKES=2
MODEL=roundclock.pml check "clock control: a refused sweeper leaves it open" "violates end_state" O0 -DCLOSE -DNO_REFUSED_ROTATE -DTAKES=2

total=$(awk -v a="$start_all" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
if [ "$failed" -gt 0 ]; then
  echo "model check: $failed of $runs runs did not go as expected (${total}s)" >&2
  exit 1
fi
echo "model check: all $runs runs as expected (${total}s)"
