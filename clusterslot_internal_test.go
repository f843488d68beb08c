package redlock

import (
	"fmt"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// TestKeySlotMatchesTheCluster: keySlot agrees with a cluster node's own
// CLUSTER KEYSLOT, hash tags included, and with the values Redis
// documents.
func TestKeySlotMatchesTheCluster(t *testing.T) {
	for key, want := range map[string]int{"123456789": 12739, "foo": 12182, "{user1000}.following": keySlot("user1000")} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, want)
		}
	}
	rc := redistest.StartRedisCluster(t, 3, 0)
	keys := []string{"", "{}", "{}x", "a{", "a}", "{a}b", "x{a}b{c}", "{{a}}", "foo{}{bar}", "{7}orders:42", "é{ü}"}
	for i := range 200 {
		keys = append(keys, fmt.Sprintf("k%d", i), fmt.Sprintf("{%d}name", i))
	}
	for _, k := range keys {
		want, err := redis.Int(rc.Masters[0].Do("CLUSTER", "KEYSLOT", k), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := keySlot(k); got != want {
			t.Errorf("keySlot(%q) = %d, the cluster says %d", k, got, want)
		}
	}
}

// TestTagOfAndUntagged: a master's tag is the smallest number in its
// slots, and untagged strips exactly the tag a cluster node adds.
func TestTagOfAndUntagged(t *testing.T) {
	s := shard{ranges: [][2]int{{5461, 10922}}}
	tag, slot := tagOf(s.owns)
	if !s.owns(slot) || keySlot("{"+tag+"}x") != slot {
		t.Fatalf("tag %q, slot %d: not in %v", tag, slot, s.ranges)
	}
	for i := range mustAtoi(t, tag) {
		if s.owns(keySlot(fmt.Sprint(i))) {
			t.Fatalf("tag %q is not the smallest: %d is in the range too", tag, i)
		}
	}
	if tag, slot := tagOf(func(int) bool { return false }); tag != "" || slot != -1 {
		t.Errorf("a master without slots got tag %q, slot %d", tag, slot)
	}
	for in, want := range map[string]string{"{7}a": "a", "{12}{x}": "{x}", "{a}b": "{a}b", "{}b": "{}b", "{7": "{7", "plain": "plain", "{7}": ""} {
		if got := untagged(in); got != want {
			t.Errorf("untagged(%q) = %q, want %q", in, got, want)
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPlaceNodes: nodes keep their master, follow their slot to a
// promoted replica, and take an unused master when theirs is gone; no two
// share a master.
func TestPlaceNodes(t *testing.T) {
	a := shard{addr: "a:1", id: "A", ranges: [][2]int{{0, 5460}}}
	b := shard{addr: "b:1", id: "B", ranges: [][2]int{{5461, 10922}}}
	c := shard{addr: "c:1", id: "C", ranges: [][2]int{{10923, 16383}}}
	first := placeNodes([]shard{a, b, c}, nil, 3)
	for i, want := range []string{"A", "B", "C"} {
		if first[i].id != want || !first[i].owns(first[i].slot) || first[i].prefix != "{"+first[i].tag+"}" {
			t.Fatalf("first placement %d: %+v", i, first[i])
		}
	}
	// A failover: B's replica B2 owns B's slots now.
	b2 := b
	b2.id, b2.addr = "B2", "b2:1"
	after := placeNodes([]shard{a, b2, c}, first, 3)
	if after[1].id != "B2" || after[1].tag != first[1].tag {
		t.Errorf("after a failover node 1 is on %+v, want B2 with the same tag", after[1])
	}
	// A reshard moves node 0's slot to C: node 0 stays on A with a new tag.
	a2 := shard{addr: "a:1", id: "A", ranges: [][2]int{{0, first[0].slot - 1}, {first[0].slot + 1, 5460}}}
	c2 := shard{addr: "c:1", id: "C", ranges: [][2]int{{first[0].slot, first[0].slot}, {10923, 16383}}}
	if first[0].slot == 0 {
		a2.ranges = a2.ranges[1:]
	}
	resharded := placeNodes([]shard{c2, a2, b}, first, 3) // C now has the lowest slot
	if resharded[0].id != "A" || resharded[0].tag == first[0].tag || !a2.owns(resharded[0].slot) {
		t.Errorf("after the reshard node 0 is %+v, want A with another tag", resharded[0])
	}
	if resharded[2].id != "C" || resharded[1].id != "B" {
		t.Errorf("after the reshard nodes 1 and 2 are %s and %s, want B and C", resharded[1].id, resharded[2].id)
	}
	// A master drained of every slot: its node has no master left.
	drained := placeNodes([]shard{a, b}, first, 3)
	if drained[2].id != "" {
		t.Errorf("node 2 of a drained master is on %+v, want no master", drained[2])
	}
}
