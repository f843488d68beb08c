package redlock

import (
	"slices"
	"testing"
)

// TestOwnerHeldSet holds five holdings and forgets them out of order: the
// set Close would release is always the live ones, each knowing its
// place, and forgetting one twice, or one never held, changes nothing.
func TestOwnerHeldSet(t *testing.T) {
	o := newOwner()
	hs := make([]*holding, 5)
	for i := range hs {
		hs[i] = &holding{}
		if err := o.hold(hs[i]); err != nil {
			t.Fatal(err)
		}
	}
	live := slices.Clone(hs)
	for _, k := range []int{1, 4, 0, 4, 2} {
		o.unhold(hs[k])
		if i := slices.Index(live, hs[k]); i >= 0 {
			live = slices.Delete(live, i, i+1)
		}
		o.unhold(&holding{})
		for i, h := range o.held {
			if h.heldPos != int32(i+1) {
				t.Fatalf("after forgetting %d: holding at %d knows place %d", k, i, h.heldPos)
			}
		}
		if hs[k].heldPos != 0 {
			t.Fatalf("forgotten holding %d still knows place %d", k, hs[k].heldPos)
		}
		got := slices.Clone(o.held)
		slices.SortFunc(got, func(a, b *holding) int { return slices.Index(hs, a) - slices.Index(hs, b) })
		if !slices.Equal(got, live) {
			t.Fatalf("after forgetting %d: held %v, want %v", k, got, live)
		}
	}
	held, ok := o.beginClose()
	if !ok || len(held) != 1 || held[0] != hs[3] {
		t.Fatalf("beginClose = %v, %v; want holding 3 only", held, ok)
	}
	if err := o.hold(&holding{}); err == nil {
		t.Fatal("hold after beginClose succeeded")
	}
}
