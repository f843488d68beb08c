package redlock

import (
	"math/rand/v2"
	"testing"
)

// TestRoundWakesAtDecisionAndCompletion: over every order of replies of
// 3, 5 and 7 nodes with random yes and no, a round's buffer wakes its
// caller exactly when the reply that decides it arrives and when the last
// one does (once if they are the same reply), never otherwise; its
// arrivals are every node that replied, and a buffer comes out of the
// pool without the round it served.
func TestRoundWakesAtDecisionAndCompletion(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, nodes := range []int{3, 5, 7} {
		quorum := nodes/2 + 1
		for trial := 0; trial < 500; trial++ {
			b := getRoundBuf(nodes, quorum)
			order := rng.Perm(nodes)
			var oks, noes, wakes int
			decided := false
			for k, i := range order {
				yes := rng.IntN(2) == 0
				b.slots[i] = reply{ok: yes}
				b.arrive(uint8(i), yes)
				if yes {
					oks++
				} else {
					noes++
				}
				decidesNow := !decided && (oks >= quorum || noes > nodes-quorum)
				decided = decided || decidesNow
				want := 0
				if decidesNow || k == nodes-1 {
					want = 1
				}
				got := len(b.wake) - wakes
				wakes = len(b.wake)
				if got != want {
					t.Fatalf("%d nodes, reply %d of %d (%d yes, %d no): %d wakes, want %d", nodes, k+1, nodes, oks, noes, got, want)
				}
			}
			if wakes == 0 || wakes > 2 {
				t.Fatalf("%d nodes: %d wakes in a round, want 1 or 2", nodes, wakes)
			}
			if got := b.arrived.Load(); got != 1<<nodes-1 {
				t.Fatalf("%d nodes: arrivals %b, want every node", nodes, got)
			}
			for range nodes + 1 {
				b.unref()
			}
			next := getRoundBuf(nodes, quorum) // this one, recycled, or a new one
			if len(next.wake) != 0 || next.arrived.Load() != 0 || next.tally.Load() != 0 {
				t.Fatalf("a recycled buffer keeps its round: %d wakes, arrivals %b", len(next.wake), next.arrived.Load())
			}
			for range nodes + 1 {
				next.unref()
			}
		}
	}
}
