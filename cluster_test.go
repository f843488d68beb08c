package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/conformance"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// The tests that start a Redis Cluster spend their time waiting for it to
// form or fail over, not on the CPU: they run in parallel with each other
// (t.Parallel), after the package's other tests, whose goroutine counts
// they would disturb. Those with an assertion on timing (extensions
// within a TTL of 1 s, replies within the node timeout) stay sequential.

// clusterFactory returns the nodes of ClusterNodes over rc and a factory
// over them with opts, both closed when the test ends.
func clusterFactory(t *testing.T, rc *redistest.RedisCluster, opts ...redlock.Option) ([]redlock.Node, *redlock.Factory) {
	t.Helper()
	nodes, err := redlock.ClusterNodes(ctxT(t, 10*time.Second), rc.Seeds())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nodes[0].(interface{ Close() error }).Close() })
	f, err := redlock.NewFactoryFromNodes(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return nodes, f
}

// TestClusterNodesPlaceOneKeyPerMaster: the nodes of a 3-master cluster
// are its masters, and a held lock has exactly one key on each, in a slot
// that master owns, under a hash tag ("{n}name").
func TestClusterNodesPlaceOneKeyPerMaster(t *testing.T) {
	t.Parallel()
	rc := redistest.StartRedisCluster(t, 3, 0)
	nodes, f := clusterFactory(t, rc)
	if len(nodes) != 3 {
		t.Fatalf("%d nodes for 3 masters", len(nodes))
	}
	ctx := ctxT(t, 10*time.Second)
	l := f.NewLock("placement")
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	for i, m := range rc.Masters {
		keys := conformance.KeysOn(t, m, "placement")
		if len(keys) != 1 {
			t.Fatalf("master %d (%s) holds %q, want one key", i, m.Addr(), keys)
		}
		if !strings.HasPrefix(keys[0], "{") || !strings.HasSuffix(keys[0], "}placement") {
			t.Errorf("master %d's key %q is not {tag}placement", i, keys[0])
		}
		if owner := rc.MasterOf(conformance.SlotOf(t, m, keys[0])); owner != m {
			t.Errorf("key %q on %s is in a slot of %s", keys[0], m.Addr(), owner.Addr())
		}
		if got := rawString(t, m, keys[0]); got != l.Token() {
			t.Errorf("master %d holds %q, want the token %q", i, got, l.Token())
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for i, m := range rc.Masters {
		if keys := conformance.KeysOn(t, m, "placement"); len(keys) != 0 {
			t.Errorf("master %d still holds %q after Release", i, keys)
		}
	}
}

// rawString is GET key on n ("" when absent).
func rawString(t *testing.T, n *redistest.Node, key string) string {
	t.Helper()
	v, err := redis.String(n.Do("GET", key), nil)
	if errors.Is(err, redis.ErrNil) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestClusterHoldsManyAutoextendedLocks: 1,000 autoextended locks held
// over four extension periods on a cluster lose none (extend_many runs
// with every key of a node in one slot), and each master holds all of
// them; Release empties the masters.
func TestClusterHoldsManyAutoextendedLocks(t *testing.T) {
	rc := redistest.StartRedisCluster(t, 3, 0)
	var lost atomic.Int64
	_, f := clusterFactory(t, rc, redlock.WithTTL(time.Second), redlock.WithObserver(redlock.Observer{
		Lost: func(redlock.LossEvent) { lost.Add(1) },
	}))
	ctx := ctxT(t, 60*time.Second)
	locks := make([]*redlock.Lock, 1000)
	for i := range locks {
		locks[i] = f.NewLock(fmt.Sprintf("many:%d", i))
		if _, err := locks[i].Acquire(ctx); err != nil {
			t.Fatalf("lock %d: %v", i, err)
		}
	}
	time.Sleep(4 * time.Second) // four TTLs: only the extensions keep them
	for i, l := range locks {
		select {
		case <-l.Done():
			t.Fatalf("lock %d ended: %v", i, l.Err())
		default:
		}
	}
	if n := lost.Load(); n != 0 {
		t.Fatalf("%d losses reported", n)
	}
	for i, m := range rc.Masters {
		if n := len(conformance.KeysOn(t, m, "many:")); n != len(locks) {
			t.Errorf("master %d holds %d keys, want %d", i, n, len(locks))
		}
	}
	for i, l := range locks {
		if err := l.Release(ctx); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
	}
	for i, m := range rc.Masters {
		if n := len(conformance.KeysOn(t, m, "many:")); n != 0 {
			t.Errorf("master %d holds %d keys after the releases", i, n)
		}
	}
}

// TestClusterMultiLockFencingAndReadWrite: a MultiLock of 5 names, a
// fenced lock and the read-write lock work on a cluster, without a
// CROSSSLOT error: every key of one node shares its slot.
func TestClusterMultiLockFencingAndReadWrite(t *testing.T) {
	t.Parallel()
	rc := redistest.StartRedisCluster(t, 3, 0)
	_, f := clusterFactory(t, rc, redlock.WithRetryTimes(0))
	ctx := ctxT(t, 20*time.Second)

	names := []string{"m1", "m2", "m3", "m4", "m5"}
	m := f.NewMultiLock(names)
	if _, err := m.Acquire(ctx); err != nil {
		t.Fatalf("MultiLock: %v", err)
	}
	if _, err := f.NewLock("m3").TryAcquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("a name of the held MultiLock: %v, want ErrNotAcquired", err)
	}
	for i, master := range rc.Masters {
		if n := len(conformance.KeysOn(t, master, "}m")); n != len(names) {
			t.Errorf("master %d holds %d of the MultiLock's keys, want %d", i, n, len(names))
		}
	}
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}

	var fences []int64
	for range 3 {
		l := f.NewLock("fenced", redlock.WithFencing(true))
		if _, err := l.Acquire(ctx); err != nil {
			t.Fatalf("fenced: %v", err)
		}
		fences = append(fences, l.Fence())
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !(fences[0] > 0 && fences[1] > fences[0] && fences[2] > fences[1]) {
		t.Errorf("fences %v do not grow", fences)
	}

	r1, r2 := f.NewReadLock("rw"), f.NewReadLock("rw")
	for _, r := range []*redlock.ReadLock{r1, r2} {
		if _, err := r.Acquire(ctx); err != nil {
			t.Fatalf("read lock: %v", err)
		}
	}
	w := f.NewWriteLock("rw")
	if _, err := w.TryAcquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("write lock beside two readers: %v, want ErrNotAcquired", err)
	}
	for _, r := range []*redlock.ReadLock{r1, r2} {
		if err := r.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Acquire(ctx); err != nil {
		t.Fatalf("write lock once the readers left: %v", err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestClusterReshardKeepsExclusion: conformance.ClusterReshard over
// redlock.ClusterNodes (the same steps run over the adapters' clients).
func TestClusterReshardKeepsExclusion(t *testing.T) {
	t.Parallel()
	conformance.ClusterReshard(t, conformance.RedigoCluster)
}

// TestClusterOfFewerThanThreeMastersIsRefused and bad seeds: the errors
// of a node list that is too short, and of seeds that are not addresses.
func TestClusterNodesBadInput(t *testing.T) {
	ctx := ctxT(t, 10*time.Second)
	if _, err := redlock.ClusterNodes(ctx, nil); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("no seeds: %v, want ErrInvalidArgument", err)
	}
	if _, err := redlock.ClusterNodes(ctx, []string{"http://x"}); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("a bad seed: %v, want ErrInvalidArgument", err)
	}
	if _, err := redlock.ClusterNodesOf(ctx, nil); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("a nil client: %v, want ErrInvalidArgument", err)
	}
	// A node that is not in cluster mode refuses CLUSTER SLOTS.
	c := redistest.Start(t, 1)
	if _, err := redlock.ClusterNodes(ctx, c.Addrs()); err == nil || !strings.Contains(err.Error(), "cluster") {
		t.Errorf("a standalone node as the seed: %v, want the refusal of CLUSTER SLOTS", err)
	}
}

// TestClusterWithTwoMastersIsRefused: a cluster of 2 masters gives the
// error of fewer than 3 nodes.
func TestClusterWithTwoMastersIsRefused(t *testing.T) {
	t.Parallel()
	rc := redistest.StartRedisCluster(t, 2, 0)
	var short *redlock.InsufficientNodesError
	if _, err := redlock.ClusterNodes(ctxT(t, 10*time.Second), rc.Seeds()); !errors.As(err, &short) || short.NodeCount != 2 {
		t.Fatalf("2 masters: %v, want an *InsufficientNodesError of 2", err)
	}
}

// TestReplicaAckOnFailover: with WithReplicaAck(1) and a quorum of all 3
// masters, every lock acquired is on the replica a failover promotes; a
// lock acquired while the replica's link was paused is not acquired at
// all. Without it (the negative control), locks acquired during the
// pause are missing from the promoted replica.
func TestReplicaAckOnFailover(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []redlock.Option
		ack  bool
	}{
		{"without_ack", nil, false},
		{"with_ack", []redlock.Option{redlock.WithReplicaAck(1)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := redistest.StartRedisCluster(t, 3, 1)
			opts := append([]redlock.Option{redlock.WithQuorum(3), redlock.WithRetryTimes(0), redlock.WithTTL(time.Minute)}, tc.opts...)
			_, f := clusterFactory(t, rc, opts...)
			ctx := ctxT(t, 60*time.Second)
			var acquired []string
			take := func(name string) error {
				_, err := f.NewLock(name).TryAcquire(ctx)
				if err == nil {
					acquired = append(acquired, name)
				}
				return err
			}
			for i := range 20 {
				if err := take(fmt.Sprintf("before:%d", i)); err != nil {
					t.Fatalf("before the pause: %v", err)
				}
			}
			resume := rc.PauseReplication(t, rc.Replicas[0][0])
			var refused int
			for i := range 20 {
				err := take(fmt.Sprintf("paused:%d", i))
				switch {
				case err == nil:
				case tc.ack && errors.Is(err, redlock.ErrNotAcquired) && errors.Is(err, redlock.ErrReplicaAck):
					refused++
				default:
					t.Fatalf("during the pause, attempt %d: %v", i, err)
				}
			}
			if tc.ack && refused != 20 {
				t.Fatalf("%d of 20 attempts refused during the pause, want all: master 0 cannot have its replica's acknowledgement", refused)
			}
			promoted := rc.KillMaster(t, 0)
			resume()
			var missing []string
			for _, name := range acquired {
				if len(conformance.KeysOn(t, promoted, name)) == 0 { // names are distinct: no name contains another here
					missing = append(missing, name)
				}
			}
			t.Logf("%d locks acquired, %d missing on the promoted replica %s", len(acquired), len(missing), promoted.Addr())
			switch {
			case tc.ack && len(missing) != 0:
				t.Fatalf("with WithReplicaAck(1) the promoted replica lacks %q", missing)
			case !tc.ack && len(missing) == 0:
				t.Fatalf("negative control: the promoted replica has every lock acquired during the pause; the pause did not delay replication")
			}
		})
	}
}

// TestReplicaAckRefusesNodesWithoutReplicas: on nodes without replicas,
// WithReplicaAck(1) fails every vote with a *ReplicaAckError that says
// how many replicas acknowledged, and leaves no key behind.
func TestReplicaAckRefusesNodesWithoutReplicas(t *testing.T) {
	for _, pipelined := range []bool{true, false} {
		t.Run(fmt.Sprintf("pipelined=%v", pipelined), func(t *testing.T) {
			c, pools := cluster(t, 3)
			f, err := redlock.NewFactory(pools, redlock.WithReplicaAck(1), redlock.WithRetryTimes(0), redlock.WithPipelining(pipelined))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			_, err = f.NewLock("unacked").TryAcquire(ctxT(t, 10*time.Second))
			var ack *redlock.ReplicaAckError
			if !errors.Is(err, redlock.ErrNotAcquired) || !errors.As(err, &ack) || ack.Want != 1 || ack.Got != 0 {
				t.Fatalf("Acquire = %v, want ErrNotAcquired with a *ReplicaAckError of 0 of 1", err)
			}
			if !strings.Contains(err.Error(), "0 of the 1 replicas") {
				t.Errorf("the error does not say how many acknowledged: %v", err)
			}
			waitFor(t, 5*time.Second, "the unacknowledged keys to be deleted", func() bool { return countHolders(t, c, "unacked") == 0 })
		})
	}
	if _, err := redlock.NewFactoryFromNodes(nil, redlock.WithReplicaAck(-1)); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("WithReplicaAck(-1): %v", err)
	}
}

// TestClusterContentionThroughFailover: clients contend for one lock
// with a lost-update witness while a master is killed and its replica
// promoted: with WithReplicaAck(1), no two hold it at once and no update
// is lost.
func TestClusterContentionThroughFailover(t *testing.T) {
	t.Parallel()
	rc := redistest.StartRedisCluster(t, 3, 1)
	const clients = 4
	factories := make([]*redlock.Factory, clients)
	for i := range factories {
		_, factories[i] = clusterFactory(t, rc, redlock.WithReplicaAck(1), redlock.WithTTL(2*time.Second), redlock.WithRetryDelay(5*time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var (
		inside, overlaps, done atomic.Int64
		counter                int64 // the witness: read, pause, write, under the lock only
		wg                     sync.WaitGroup
	)
	stop := make(chan struct{})
	for _, f := range factories {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				l := f.NewLock("contended")
				if _, err := l.Acquire(ctx); err != nil {
					continue
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				v := counter
				time.Sleep(time.Millisecond)
				counter = v + 1
				done.Add(1)
				inside.Add(-1)
				_ = l.Release(ctx)
			}
		}()
	}
	time.Sleep(2 * time.Second)
	before := done.Load()
	rc.KillMaster(t, 0)
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()
	after := done.Load()
	t.Logf("%d critical sections, %d before the kill", after, before)
	if overlaps.Load() != 0 {
		t.Fatalf("%d overlaps", overlaps.Load())
	}
	if counter != after {
		t.Fatalf("the witness counted %d, %d critical sections ran: updates were lost", counter, after)
	}
	if after <= before {
		t.Fatalf("no critical section after the failover (%d before, %d in all)", before, after)
	}
}

// TestClusterOfOneMasterIsRefused: a master alone does not know its own
// address (CLUSTER SLOTS leaves its ip empty); ClusterNodes fills it in
// from the seed and refuses the cluster as too small, not as unreadable.
func TestClusterOfOneMasterIsRefused(t *testing.T) {
	t.Parallel()
	rc := redistest.StartRedisCluster(t, 1, 0)
	var short *redlock.InsufficientNodesError
	if _, err := redlock.ClusterNodes(ctxT(t, 10*time.Second), rc.Seeds()); !errors.As(err, &short) || short.NodeCount != 1 {
		t.Fatalf("1 master: %v, want an *InsufficientNodesError of 1", err)
	}
}

// TestReplicaAckNodeWithoutReplicasFailsFast: under load, a node that has
// lost its replicas fails each write with a *ReplicaAckError that says so,
// rather than with a timeout: its WAITs, which hold its pipelined
// connection one after the other, must not pile up behind each other. The
// two nodes with a replica decide every round meanwhile.
func TestReplicaAckNodeWithoutReplicasFailsFast(t *testing.T) {
	c, pools := cluster(t, 3)
	for _, m := range c.Nodes[1:] {
		redistest.StartReplica(t, m)
		waitFor(t, 10*time.Second, "the replica of "+m.Addr()+" to acknowledge", func() bool { return acked(t, m) })
	}
	f, err := redlock.NewFactory(pools, redlock.WithReplicaAck(1), redlock.WithRetryTimes(0))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := ctxT(t, 60*time.Second)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				l := f.NewLock(fmt.Sprintf("noreplica:%d:%d", g, i))
				if _, err := l.TryAcquire(ctx); err != nil {
					failed.Add(1)
					continue
				}
				_ = l.Release(ctx)
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Errorf("%d of 400 acquisitions failed: the two nodes with a replica should decide them", n)
	}
	// Right after the load, an attempt that needs node 0 hears why it fails.
	_, err = f.NewLock("noreplica:all", redlock.WithQuorum(3)).TryAcquire(ctx)
	var ne *redlock.NodeError
	if !errors.Is(err, redlock.ErrReplicaAck) || !errors.As(err, &ne) || ne.Node != 0 || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an attempt on all 3 nodes: %v, want node 0's *ReplicaAckError and no timeout", err)
	}
}

// acked reports whether a write on n is acknowledged by one replica.
func acked(t *testing.T, n *redistest.Node) bool {
	conn, err := redis.Dial("tcp", n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Do("SET", "acked-probe", "1"); err != nil {
		t.Fatal(err)
	}
	got, err := redis.Int(conn.Do("WAIT", 1, 100))
	return err == nil && got == 1
}
