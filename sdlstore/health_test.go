package sdlstore_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
	"github.com/redlockplus/redlock/sdlstore"
)

// Standalone instances: healthy while they answer as masters with the
// replicas NodeCount asks for.
func TestHealthStandalone(t *testing.T) {
	e := newEnv(t, 2)
	c, s := ctx(t), e.s
	h, err := s.Health(c)
	must(t, err)
	if !h.Healthy() || !h.Reachable() || len(h.Instances) != 2 || len(h.Sentinels) != 0 || h.NodeCount != 1 {
		t.Fatalf("Health = %+v", h)
	}
	for i, in := range h.Instances {
		if in.Instance != i || in.Role != "master" || !in.Reachable || len(in.ModuleCommands) != 0 || len(in.Replicas) != 0 {
			t.Fatalf("instance %d: %+v", i, in)
		}
	}
	e.c.Nodes[1].Kill()
	h, err = s.Health(c)
	must(t, err)
	if h.Healthy() || h.Reachable() || !h.Instances[0].Healthy || h.Instances[1].Reachable || h.Instances[1].Error == "" {
		t.Fatalf("Health with instance 1 down = %+v", h)
	}
}

// NodeCount 2 wants one online replica per instance; a pool that reaches a
// replica instead of the master is unhealthy too.
func TestHealthReplicas(t *testing.T) {
	master := redistest.Start(t, 1).Nodes[0]
	s, err := sdlstore.New([]redlock.Pool{master.Pool()}, sdlstore.WithNodeCount(2))
	must(t, err)
	defer s.Close()
	c := ctx(t)
	h, _ := s.Health(c)
	if h.Healthy() || !slices.Contains(h.Instances[0].Problems, "0 of 1 replicas online") {
		t.Fatalf("Health without a replica = %+v", h)
	}
	replica := redistest.StartReplica(t, master)
	// The master lists the replica as online once the first sync is done
	// (wait_bgsave before it), which may come after the replica's link is up.
	deadline := time.Now().Add(10 * time.Second)
	for {
		h, _ = s.Health(c)
		if h.Healthy() || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	in := h.Instances[0]
	if !h.Healthy() || len(in.Replicas) != 1 || in.Replicas[0].Addr != replica.Addr() || in.Replicas[0].State != "online" {
		t.Fatalf("Health with a replica = %+v", h)
	}
	onReplica, err := sdlstore.New([]redlock.Pool{replica.Pool()})
	must(t, err)
	defer onReplica.Close()
	h, _ = onReplica.Health(c)
	in = h.Instances[0]
	if h.Healthy() || in.Role != "slave" || in.MasterLink != "up" || !strings.Contains(strings.Join(in.Problems, ";"), "not master") {
		t.Fatalf("Health of a replica = %+v", h)
	}
}

// With sentinels: healthy once the sentinel sees the replica and the
// other sentinel; unhealthy when the replica dies or the sentinel does.
func TestHealthSentinel(t *testing.T) {
	master := redistest.Start(t, 1).Nodes[0]
	replica := redistest.StartReplica(t, master)
	sent := redistest.StartSentinel(t, "hmaster", master, 300*time.Millisecond)
	redistest.StartSentinel(t, "hmaster", master, 300*time.Millisecond)
	s, err := sdlstore.NewFromEnv(lookup(map[string]string{
		"DBAAS_SERVICE_HOST":          "127.0.0.1",
		"DBAAS_SERVICE_SENTINEL_PORT": strconv.Itoa(sent.Port),
		"DBAAS_MASTER_NAME":           "hmaster",
		"DBAAS_NODE_COUNT":            "2",
	}))
	must(t, err)
	defer s.Close()
	c := ctx(t)
	h := waitHealth(t, s, func(h sdlstore.Health) bool { return h.Healthy() })
	sh := h.Sentinels[0]
	if sh.Addr != sent.Addr() || sh.MasterAddr != master.Addr() || sh.MasterFlags != "master" || sh.OtherSentinels != 1 ||
		len(sh.Replicas) != 1 || sh.Replicas[0].Addr != replica.Addr() || h.Instances[0].Addr != master.Addr() {
		t.Fatalf("healthy sentinel setup: %+v", h)
	}
	replica.Kill()
	h = waitHealth(t, s, func(h sdlstore.Health) bool { return !h.Sentinels[0].Healthy && !h.Instances[0].Healthy })
	if !h.Reachable() {
		t.Fatalf("with the replica down everything still answers: %+v", h)
	}
	sent.Kill()
	h, err = s.Health(c)
	must(t, err)
	if h.Sentinels[0].Reachable || h.Reachable() {
		t.Fatalf("Health with the sentinel down = %+v", h)
	}
}

// waitHealth polls Health until ok holds, for at most 30 s.
func waitHealth(t *testing.T, s *sdlstore.Store, ok func(sdlstore.Health) bool) sdlstore.Health {
	t.Helper()
	var h sdlstore.Health
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var err error
		if h, err = s.Health(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if ok(h) {
			return h
		}
	}
	t.Fatalf("health never reached the expected state: %+v", h)
	return h
}

// Statistics reads key counts and server figures from INFO.
func TestStatistics(t *testing.T) {
	e := newEnv(t, 2)
	c, s := ctx(t), e.s
	must(t, s.Set(c, "ns", map[string][]byte{"a": {}, "b": {}, "c": {}}))
	st, err := s.Statistics(c)
	must(t, err)
	if len(st) != 2 {
		t.Fatalf("Statistics = %+v", st)
	}
	for i, x := range st {
		want := int64(0)
		if i == s.InstanceIndex("ns") {
			want = 3
		}
		if x.Instance != i || x.Error != "" || x.Keys != want || x.UsedMemory <= 0 || x.ConnectedClients < 1 || x.UptimeSeconds < 0 {
			t.Fatalf("instance %d: %+v, want %d keys", i, x, want)
		}
	}
	e.c.Nodes[0].Kill()
	st, err = s.Statistics(c)
	must(t, err)
	if st[0].Error == "" || st[0].Keys != 0 || st[1].Error != "" {
		t.Fatalf("Statistics with instance 0 down = %+v", st)
	}
}

// Health and Statistics after Close are ErrClosed.
func TestHealthClosed(t *testing.T) {
	e := newEnv(t, 1)
	must(t, e.s.Close())
	_, err := e.s.Health(ctx(t))
	wantErr(t, err, sdlstore.ErrClosed)
	_, err = e.s.Statistics(ctx(t))
	wantErr(t, err, sdlstore.ErrClosed)
	_, err = e.s.Namespaces(ctx(t))
	wantErr(t, err, sdlstore.ErrClosed)
}
