package redlock

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestRoundWakesAtDecisionAndCompletion: over every order of replies of
// 3, 5 and 7 nodes with random yes, no and failures, a round's buffer
// wakes its caller exactly when the reply that decides it arrives, when
// the last one does and, in a contested round (an acquire attempt's), at
// its first no (once if these are the same reply), never otherwise; its
// arrivals are every node that replied, and a buffer comes out of the
// pool without the round it served.
func TestRoundWakesAtDecisionAndCompletion(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, contest := range []bool{false, true} {
		for _, nodes := range []int{3, 5, 7} {
			quorum := nodes/2 + 1
			for trial := 0; trial < 500; trial++ {
				wakesOfRound(t, rng, nodes, quorum, contest)
			}
		}
	}
}

// wakesOfRound checks one round of TestRoundWakesAtDecisionAndCompletion.
func wakesOfRound(t *testing.T, rng *rand.Rand, nodes, quorum int, contest bool) {
	t.Helper()
	b := getRoundBuf(nodes, quorum, contest)
	var oks, refusals, noes, wakes int
	decided := false
	for k, i := range rng.Perm(nodes) {
		yes, failed := false, false
		switch rng.IntN(3) {
		case 0:
			yes = true
		case 1:
			failed = true
		}
		b.slots[i] = reply{ok: yes}
		b.arrive(uint8(i), yes, !yes && !failed)
		switch {
		case yes:
			oks++
		case failed:
			refusals++
		default:
			refusals++
			noes++
		}
		decidesNow := !decided && (oks >= quorum || refusals > nodes-quorum)
		decided = decided || decidesNow
		firstNo := contest && !yes && !failed && noes == 1
		want := 0
		if decidesNow || firstNo || k == nodes-1 {
			want = 1
		}
		got := len(b.wake) - wakes
		wakes = len(b.wake)
		if got != want {
			t.Fatalf("%d nodes, contest %v, reply %d of %d (%d yes, %d refused or failed): %d wakes, want %d",
				nodes, contest, k+1, nodes, oks, refusals, got, want)
		}
	}
	if wakes == 0 || wakes > cap(b.wake) {
		t.Fatalf("%d nodes: %d wakes in a round, want 1 to %d", nodes, wakes, cap(b.wake))
	}
	if got := b.arrived.Load(); got != 1<<nodes-1 {
		t.Fatalf("%d nodes: arrivals %b, want every node", nodes, got)
	}
	for range nodes + 1 {
		b.unref()
	}
	next := getRoundBuf(nodes, quorum, contest) // this one, recycled, or a new one
	if len(next.wake) != 0 || next.arrived.Load() != 0 || next.tally.Load() != 0 || next.refused.Load() != 0 {
		t.Fatalf("a recycled buffer keeps its round: %d wakes, arrivals %b", len(next.wake), next.arrived.Load())
	}
	for range nodes + 1 {
		next.unref()
	}
}

// TestRoundByArrival: the counted nodes come in the order their replies
// were counted, ties in node order, and nodes not counted (silent, or
// given up on) are left out; the extender reads a batch's quorum-th yes
// off this order.
func TestRoundByArrival(t *testing.T) {
	r := round{
		all:     make([]*node, 5),
		got:     0b11011, // node 2 silent
		arrived: []time.Duration{40, 10, 5, 40, 20},
	}
	got := r.byArrival(nil)
	want := []uint8{1, 4, 0, 3}
	if !slices.Equal(got, want) {
		t.Fatalf("byArrival = %v, want %v", got, want)
	}
}
