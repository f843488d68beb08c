package sdlstore_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/redlockplus/redlock/sdlstore"
)

// FindKeys, FindAndGet and RemoveAll(AndPublish) handle 100k keys with SCAN
// and leave a neighbouring namespace alone.
func TestScan100kKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("100k keys")
	}
	const n = 100_000
	e := newEnv(t, 1)
	c, s := ctx(t), e.s
	r := e.raw(e.c.Nodes[0])
	// Pipelined fill: 100 MSETs of 1000 keys, one flush.
	for b := 0; b < n/1000; b++ {
		args := make([]any, 0, 2000)
		for i := b * 1000; i < (b+1)*1000; i++ {
			args = append(args, "{big},k"+strconv.Itoa(i), strconv.Itoa(i))
		}
		must(t, r.Send("MSET", args...))
	}
	must(t, r.Flush())
	for b := 0; b < n/1000; b++ {
		if _, err := r.Receive(); err != nil {
			t.Fatal(err)
		}
	}
	must(t, s.Set(c, "bigger", map[string][]byte{"k1": []byte("other")}))

	keys, err := s.FindKeys(c, "big", "k*")
	must(t, err)
	if len(keys) != n {
		t.Fatalf("FindKeys found %d keys, want %d", len(keys), n)
	}
	got, err := s.FindAndGet(c, "big", "k1234*")
	must(t, err)
	if len(got) != 11 || string(got["k12345"]) != "12345" {
		t.Fatalf("FindAndGet(k1234*) = %d entries, k12345=%q", len(got), got["k12345"])
	}
	all, err := s.FindAndGet(c, "big", "*")
	must(t, err)
	if len(all) != n {
		t.Fatalf("FindAndGet(*) = %d entries", len(all))
	}

	recv := e.rawSubscriber(e.c.Nodes[0], "{big},gone")
	must(t, s.RemoveAllAndPublish(c, "big", sdlstore.ChannelEvents{"gone": {"all"}}))
	if msg, ok := recv(5 * time.Second); !ok || string(msg.Data) != "all" {
		t.Fatalf("notification %q (%v)", msg.Data, ok)
	}
	if keys, _ := s.FindKeys(c, "big", "*"); len(keys) != 0 {
		t.Fatalf("%d keys left", len(keys))
	}
	if v, _ := s.Get(c, "bigger", "k1"); string(v["k1"]) != "other" {
		t.Fatal("RemoveAll reached another namespace")
	}
	// Publish only once, after all batches.
	must(t, s.SetAndPublish(c, "big", sdlstore.ChannelEvents{"gone": {"marker"}}, map[string][]byte{"x": {}}))
	if msg, _ := recv(5 * time.Second); string(msg.Data) != "marker" {
		t.Fatalf("extra notification %q", msg.Data)
	}
}
