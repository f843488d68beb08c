package redistest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// tagOn returns a hash tag ("{t7}") whose slot the master m owns now, and
// that slot.
func tagOn(t *testing.T, c *RedisCluster, m *Node) (string, int) {
	t.Helper()
	for i := 0; i < 10000; i++ {
		tag := "{t" + strconv.Itoa(i) + "}"
		slot, err := redis.Int(m.Do("CLUSTER", "KEYSLOT", tag), nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.MasterOf(slot) == m {
			return tag, slot
		}
	}
	t.Fatalf("no hash tag maps to a slot of %s", m.Addr())
	return "", 0
}

func clusterInfo(t *testing.T, n *Node) string {
	t.Helper()
	info, err := redis.String(n.Do("CLUSTER", "INFO"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func replInfo(t *testing.T, n *Node) string {
	t.Helper()
	info, err := redis.String(n.Do("INFO", "replication"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// getString reads key on n; "" with ok false when it does not exist.
func getString(t *testing.T, n *Node, key string) (string, bool) {
	t.Helper()
	v, err := redis.String(mustDo(t, n, "GET", key), nil)
	if err == redis.ErrNil {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return v, true
}

// setWait writes key on m and returns what WAIT numReplicas timeoutMS
// answers on the same connection (WAIT waits for the connection's own
// writes).
func setWait(t *testing.T, m *Node, key, value string, numReplicas, timeoutMS int) int {
	t.Helper()
	conn, err := redis.Dial("tcp", m.Addr(), redis.DialReadTimeout(time.Duration(timeoutMS)*time.Millisecond+5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if v, err := redis.String(conn.Do("SET", key, value)); err != nil || v != "OK" {
		t.Fatalf("SET %s on %s: %q, %v", key, m.Addr(), v, err)
	}
	n, err := redis.Int(conn.Do("WAIT", numReplicas, timeoutMS))
	if err != nil {
		t.Fatalf("WAIT on %s: %v", m.Addr(), err)
	}
	return n
}

// The shared cluster of the read-only checks and the slot move: 3 masters
// with one replica each.
func TestRedisCluster(t *testing.T) {
	c := StartRedisCluster(t, 3, 1)

	t.Run("up", func(t *testing.T) {
		if len(c.Masters) != 3 || len(c.Replicas) != 3 || len(c.Nodes()) != 6 {
			t.Fatalf("%d masters, %d replica sets, %d nodes; want 3, 3, 6", len(c.Masters), len(c.Replicas), len(c.Nodes()))
		}
		ids := map[string]bool{}
		for _, n := range c.Nodes() {
			info := clusterInfo(t, n)
			for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_slots_ok:16384", "cluster_known_nodes:6", "cluster_size:3"} {
				if infoField(info, strings.Split(want, ":")[0]) != strings.Split(want, ":")[1] {
					t.Errorf("%s: CLUSTER INFO lacks %s:\n%s", n.Addr(), want, info)
				}
			}
			id, err := redis.String(n.Do("CLUSTER", "MYID"), nil)
			if err != nil || id != c.ID(n) || len(id) != 40 {
				t.Errorf("%s: CLUSTER MYID %q (%v), ID %q", n.Addr(), id, err, c.ID(n))
			}
			ids[id] = true
		}
		if len(ids) != 6 {
			t.Errorf("%d distinct node ids, want 6", len(ids))
		}
		seeds := c.Seeds()
		prev := -1
		for i, m := range c.Masters {
			if seeds[i] != m.Addr() {
				t.Errorf("Seeds()[%d] = %s, want %s", i, seeds[i], m.Addr())
			}
			first := c.firstSlot[i]
			if first <= prev || c.MasterOf(first) != m {
				t.Errorf("master %d (%s): first slot %d after %d, owned by %v", i, m.Addr(), first, prev, c.MasterOf(first))
			}
			prev = first
		}
		if c.MasterOf(0) != c.Masters[0] || c.MasterOf(ClusterSlots-1) != c.Masters[2] {
			t.Errorf("slots 0 and 16383 are owned by %v and %v", c.MasterOf(0), c.MasterOf(ClusterSlots-1))
		}
		// A write goes to the slot's owner; another master redirects it.
		slot, _ := redis.Int(c.Masters[0].Do("CLUSTER", "KEYSLOT", "k"), nil)
		owner := c.MasterOf(slot)
		mustDo(t, owner, "SET", "k", "v")
		for _, m := range c.Masters {
			if m == owner {
				continue
			}
			_, err := query(m, "GET", "k")
			if err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("MOVED %d %s", slot, owner.Addr())) {
				t.Errorf("GET k on %s: %v, want MOVED %d %s", m.Addr(), err, slot, owner.Addr())
			}
		}
	})

	t.Run("replicas in sync", func(t *testing.T) {
		for i, m := range c.Masters {
			if len(c.Replicas[i]) != 1 {
				t.Fatalf("master %s has %d replicas", m.Addr(), len(c.Replicas[i]))
			}
			r := c.Replicas[i][0]
			if slices.Contains(c.Masters, r) {
				t.Fatalf("replica %s is also a master", r.Addr())
			}
			mi, ri := replInfo(t, m), replInfo(t, r)
			if infoField(mi, "role") != "master" || infoField(mi, "connected_slaves") != "1" ||
				!strings.Contains(mi, "port="+strconv.Itoa(r.Port)+",state=online") {
				t.Errorf("master %s:\n%s", m.Addr(), mi)
			}
			if infoField(ri, "role") != "slave" || infoField(ri, "master_port") != strconv.Itoa(m.Port) ||
				infoField(ri, "master_link_status") != "up" {
				t.Errorf("replica %s of %s:\n%s", r.Addr(), m.Addr(), ri)
			}
			tag, _ := tagOn(t, c, m)
			if n := setWait(t, m, tag+"sync", "v"+strconv.Itoa(i), 1, 5000); n != 1 {
				t.Fatalf("WAIT 1 on %s: %d replicas", m.Addr(), n)
			}
			conn, err := redis.Dial("tcp", r.Addr())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Do("READONLY"); err != nil {
				t.Fatal(err)
			}
			v, err := redis.String(conn.Do("GET", tag+"sync"))
			conn.Close()
			if err != nil || v != "v"+strconv.Itoa(i) {
				t.Errorf("GET on replica %s: %q, %v", r.Addr(), v, err)
			}
		}
	})

	t.Run("MoveSlot", func(t *testing.T) {
		from := c.Masters[0]
		to := c.Masters[1]
		tag, slot := tagOn(t, c, from)
		key := tag + "lock"
		mustDo(t, from, "SET", key, "token", "PX", 60000)
		const others = 250 // more than one MIGRATE batch
		for i := range others {
			mustDo(t, from, "SET", tag+strconv.Itoa(i), i)
		}
		keys, _ := redis.Int(mustDo(t, from, "CLUSTER", "COUNTKEYSINSLOT", slot), nil)
		c.MoveSlot(t, slot, to)
		if got := c.MasterOf(slot); got != to {
			t.Fatalf("slot %d owned by %v after MoveSlot, want %s", slot, got, to.Addr())
		}
		if v, ok := getString(t, to, key); !ok || v != "token" {
			t.Fatalf("GET %s on the target: %q, %v", key, v, ok)
		}
		if pttl, _ := redis.Int(mustDo(t, to, "PTTL", key), nil); pttl <= 0 || pttl > 60000 {
			t.Fatalf("PTTL %s on the target: %d, want in (0, 60000]", key, pttl)
		}
		if n, _ := redis.Int(mustDo(t, to, "CLUSTER", "COUNTKEYSINSLOT", slot), nil); n != keys || keys < others+1 {
			t.Errorf("target holds %d keys of slot %d, want %d (at least %d)", n, slot, keys, others+1)
		}
		if n, _ := redis.Int(mustDo(t, from, "CLUSTER", "COUNTKEYSINSLOT", slot), nil); n != 0 {
			t.Errorf("source still holds %d keys of slot %d", n, slot)
		}
		_, err := query(from, "GET", key)
		if want := fmt.Sprintf("MOVED %d %s", slot, to.Addr()); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("GET on the source: %v, want %s", err, want)
		}
		// Every node, replicas included, names the new owner.
		for _, n := range c.Nodes() {
			m, err := slotMapOf(n)
			if err != nil || m.owner(slot) != to.Port {
				t.Errorf("%s: slot %d owned by port %d (%v), want %d", n.Addr(), slot, m.owner(slot), err, to.Port)
			}
		}
		c.MoveSlot(t, slot, to) // to its owner: nothing to do
		c.MoveSlot(t, slot, from)
		if v, ok := getString(t, from, key); !ok || v != "token" {
			t.Fatalf("GET %s after the move back: %q, %v", key, v, ok)
		}
		c.WaitOK(t)
	})
}

// KillMaster promotes the replica, which holds a write WAIT saw
// replicated.
func TestRedisClusterKillMaster(t *testing.T) {
	t.Parallel()
	c := StartRedisCluster(t, 3, 1)
	old, rep := c.Masters[0], c.Replicas[0][0]
	tag, slot := tagOn(t, c, old)
	if n := setWait(t, old, tag+"k", "before", 1, 5000); n != 1 {
		t.Fatalf("WAIT 1: %d replicas", n)
	}
	start := time.Now()
	nm := c.KillMaster(t, 0)
	t.Logf("failover in %v", time.Since(start))
	if nm != rep || old.Running() {
		t.Fatalf("KillMaster returned %s (old master running: %v), want the replica %s", nm.Addr(), old.Running(), rep.Addr())
	}
	if infoField(replInfo(t, nm), "role") != "master" || c.MasterOf(slot) != nm {
		t.Fatalf("%s is not the master of slot %d", nm.Addr(), slot)
	}
	if v, ok := getString(t, nm, tag+"k"); !ok || v != "before" {
		t.Fatalf("GET on the promoted replica: %q, %v", v, ok)
	}
	for _, n := range c.Nodes() {
		if n.Running() && infoField(clusterInfo(t, n), "cluster_state") != "ok" {
			t.Errorf("%s: cluster not ok after the failover", n.Addr())
		}
	}

	// Started again, the old master rejoins as a replica of the new one.
	old.Start()
	var info string
	if !waitFor(30*time.Second, func() bool {
		info = replInfo(t, old)
		return infoField(info, "role") == "slave" && infoField(info, "master_port") == strconv.Itoa(nm.Port) &&
			infoField(info, "master_link_status") == "up"
	}) {
		t.Fatalf("the restarted old master did not become a replica of %s:\n%s", nm.Addr(), info)
	}
	c.WaitOK(t)
	if c.MasterOf(slot) != nm {
		t.Fatalf("slot %d owned by %v after the old master's return, want %s", slot, c.MasterOf(slot), nm.Addr())
	}
}

// PauseReplication holds the master's writes back from the replica: a
// write during the pause is acknowledged by the master but not by WAIT,
// and is missing from the replica promoted when the master is killed,
// while one WAIT saw replicated before the pause is there. On resume
// without a kill the replica catches up.
func TestRedisClusterPauseReplication(t *testing.T) {
	t.Parallel()
	c := StartRedisCluster(t, 3, 1)

	t.Run("resume", func(t *testing.T) {
		m, r := c.Masters[1], c.Replicas[1][0]
		tag, _ := tagOn(t, c, m)
		resume := c.PauseReplication(t, r)
		if n := setWait(t, m, tag+"during", "x", 1, 300); n != 0 {
			t.Fatalf("WAIT 1 during the pause: %d replicas acknowledged", n)
		}
		resume()
		resume() // again: nothing
		if n := setWait(t, m, tag+"after", "y", 1, 10000); n != 1 {
			t.Fatalf("WAIT 1 after resume: %d replicas", n)
		}
		conn, err := redis.Dial("tcp", r.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Do("READONLY"); err != nil {
			t.Fatal(err)
		}
		if v, err := redis.String(conn.Do("GET", tag+"during")); err != nil || v != "x" {
			t.Fatalf("GET on the resumed replica: %q, %v", v, err)
		}
		c.WaitOK(t)
	})

	t.Run("kill", func(t *testing.T) {
		m, r := c.Masters[0], c.Replicas[0][0]
		tag, _ := tagOn(t, c, m)
		if n := setWait(t, m, tag+"before", "b", 1, 5000); n != 1 {
			t.Fatalf("WAIT 1 before the pause: %d replicas", n)
		}
		resume := c.PauseReplication(t, r)
		defer resume()
		start := time.Now()
		if n := setWait(t, m, tag+"during", "d", 1, 300); n != 0 {
			t.Fatalf("WAIT 1 during the pause: %d replicas acknowledged", n)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the master took %v to answer during the pause", d)
		}
		start = time.Now()
		nm := c.KillMaster(t, 0)
		t.Logf("failover in %v", time.Since(start))
		if nm != r {
			t.Fatalf("KillMaster promoted %s, want the paused replica %s", nm.Addr(), r.Addr())
		}
		if v, ok := getString(t, nm, tag+"before"); !ok || v != "b" {
			t.Fatalf("the write before the pause on the promoted replica: %q, %v", v, ok)
		}
		if v, ok := getString(t, nm, tag+"during"); ok {
			t.Fatalf("the write during the pause reached the promoted replica: %q", v)
		}
	})
}

// A cluster of 2 masters, fewer than redis-cli creates, is created by
// hand: each master owns half of the slots, in order, and both agree.
func TestRedisClusterTwoMasters(t *testing.T) {
	t.Parallel()
	c := StartRedisCluster(t, 2, 0)
	if len(c.Masters) != 2 || len(c.Replicas) != 2 || len(c.Nodes()) != 2 {
		t.Fatalf("%d masters, %d replica sets, %d nodes; want 2, 2, 2", len(c.Masters), len(c.Replicas), len(c.Nodes()))
	}
	ids := map[string]bool{}
	for _, n := range c.Nodes() {
		info := clusterInfo(t, n)
		for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_slots_ok:16384", "cluster_known_nodes:2", "cluster_size:2"} {
			field, value, _ := strings.Cut(want, ":")
			if infoField(info, field) != value {
				t.Errorf("%s: CLUSTER INFO lacks %s:\n%s", n.Addr(), want, info)
			}
		}
		id, err := redis.String(n.Do("CLUSTER", "MYID"), nil)
		if err != nil || id != c.ID(n) || len(id) != 40 {
			t.Errorf("%s: CLUSTER MYID %q (%v), ID %q", n.Addr(), id, err, c.ID(n))
		}
		ids[id] = true

		m, err := slotMapOf(n)
		if err != nil {
			t.Fatalf("CLUSTER SLOTS on %s: %v", n.Addr(), err)
		}
		want := SlotMap{{0, 8191, "127.0.0.1", c.Masters[0].Port}, {8192, ClusterSlots - 1, "127.0.0.1", c.Masters[1].Port}}
		if !slices.Equal(m, want) || len(m.masters()) != 2 || m.OwnerAddr(8192) != c.Masters[1].Addr() {
			t.Errorf("%s: CLUSTER SLOTS %v, want %v", n.Addr(), m, want)
		}
	}
	if len(ids) != 2 {
		t.Errorf("%d distinct node ids, want 2", len(ids))
	}
	if c.firstSlot[0] != 0 || c.firstSlot[1] != 8192 || c.Masters[0] == c.Masters[1] {
		t.Errorf("first slots %v of masters %s and %s, want [0 8192]", c.firstSlot, c.Masters[0].Addr(), c.Masters[1].Addr())
	}
	for i, r := range c.Replicas {
		if len(r) != 0 {
			t.Errorf("master %d has %d replicas, want none", i, len(r))
		}
	}
	// A write goes to the slot's owner; the other master redirects it.
	for i, m := range c.Masters {
		tag, slot := tagOn(t, c, m)
		mustDo(t, m, "SET", tag+"k", "v")
		other := c.Masters[1-i]
		_, err := query(other, "GET", tag+"k")
		if want := fmt.Sprintf("MOVED %d %s", slot, m.Addr()); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("GET %sk on %s: %v, want %s", tag, other.Addr(), err, want)
		}
	}
}
