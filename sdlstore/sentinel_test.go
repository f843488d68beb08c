package sdlstore_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/testkit/redistest"
	"github.com/redlockplus/redlock/sdlstore"
)

// With a real redis-sentinel and a replica, the store finds the master
// through the sentinel and keeps working, notifications included, after the
// master is killed and the sentinel promotes the replica.
func TestSentinelFailover(t *testing.T) {
	master := redistest.Start(t, 1).Nodes[0]
	replica := redistest.StartReplica(t, master)
	sent := redistest.StartSentinel(t, "sdlmaster", master, 300*time.Millisecond)
	sent.WaitReplicas(1, 20*time.Second)

	s, err := sdlstore.NewFromEnv(lookup(map[string]string{
		"DBAAS_SERVICE_HOST":          "127.0.0.1",
		"DBAAS_SERVICE_SENTINEL_PORT": strconv.Itoa(sent.Port),
		"DBAAS_MASTER_NAME":           "sdlmaster",
	}), sdlstore.WithReconnectDelay(20*time.Millisecond), sdlstore.WithHealthCheckInterval(200*time.Millisecond))
	must(t, err)
	defer s.Close()
	c := ctx(t)
	if !s.IsActive(c) {
		t.Fatal("not active through the sentinel")
	}
	must(t, s.Set(c, "ns", map[string][]byte{"k": []byte("before")}))
	if v, _ := redis.String(master.Do("GET", "{ns},k"), nil); v != "before" {
		t.Fatalf("the write did not reach the master: %q", v)
	}
	cb, next := collector(t)
	must(t, s.SubscribeChannel(c, "ns", cb, "ch"))
	if n, _ := redis.Int(master.Do("WAIT", 1, 5000), nil); n != 1 {
		t.Fatal("replica did not acknowledge the write")
	}

	master.Kill()
	start := time.Now()
	deadline := start.Add(60 * time.Second)
	for {
		err := s.Set(c, "ns", map[string][]byte{"k2": []byte("after")})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write accepted within 60s of the failover: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("writes resumed %v after the master was killed", time.Since(start).Round(time.Millisecond))
	if got := sent.MasterAddr(); got != replica.Addr() {
		t.Fatalf("sentinel reports master %s, want the promoted replica %s", got, replica.Addr())
	}
	got, err := s.Get(c, "ns", "k", "k2")
	must(t, err)
	if string(got["k"]) != "before" || string(got["k2"]) != "after" {
		t.Fatalf("after failover Get = %q", got)
	}
	if v, _ := redis.String(replica.Do("GET", "{ns},k2"), nil); v != "after" {
		t.Fatalf("the write did not go to the new master: %q", v)
	}
	// The subscriber followed the master too.
	notes := make(chan note, 1)
	go func() { notes <- next() }()
	for {
		if time.Now().After(deadline) {
			t.Fatal("no notification after failover")
		}
		_ = s.SetAndPublish(c, "ns", sdlstore.ChannelEvents{"ch": {"moved"}}, map[string][]byte{"k": {}})
		select {
		case n := <-notes:
			if !n.Is("ch", "moved") {
				t.Fatalf("got %+v", n)
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// A sentinel that does not know the master name gives ErrNotConnected.
func TestSentinelUnknownMaster(t *testing.T) {
	master := redistest.Start(t, 1).Nodes[0]
	sent := redistest.StartSentinel(t, "known", master, time.Second)
	s, err := sdlstore.NewFromEnv(lookup(map[string]string{
		"DBAAS_SERVICE_HOST":          "127.0.0.1",
		"DBAAS_SERVICE_SENTINEL_PORT": strconv.Itoa(sent.Port),
		"DBAAS_MASTER_NAME":           "unknown",
	}))
	must(t, err)
	defer s.Close()
	_, err = s.Get(ctx(t), "ns", "k")
	wantErr(t, err, sdlstore.ErrNotConnected)
}
