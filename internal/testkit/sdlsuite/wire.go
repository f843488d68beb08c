package sdlsuite

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/sdlstore"
)

func init() {
	cases = append(cases, []testCase{
		{name: "WireFormatData", instances: []int{3}, run: testWireFormatData},
		{name: "WireFormatSubscribe", instances: []int{3}, run: testWireFormatSubscribe, subscribes: true},
		{name: "WireFormatLock", instances: []int{1}, run: testWireFormatLock},
		{name: "WireFormatPublish", instances: both, run: testWireFormatPublish},
	}...)
}

// The raw Redis keys, values and messages are those ricsdl and sdlgo use,
// checked with plain redigo in both directions.
func testWireFormatData(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	ns := "wire"
	r := e.raw(e.home(ns))

	must(t, s.Set(c, ns, map[string][]byte{"k": {'v', 0, 0xff}}))
	v, err := redis.Bytes(r.Do("GET", "{wire},k"))
	if err != nil || !bytes.Equal(v, []byte{'v', 0, 0xff}) {
		t.Fatalf("raw GET {wire},k = %q, %v", v, err)
	}
	// Written by another client, read by the store.
	if _, err := r.Do("SET", "{wire},other", "from ricsdl"); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(c, ns, "other")
	if string(got["other"]) != "from ricsdl" {
		t.Fatalf("Get(other) = %q", got)
	}
	// Groups are Redis sets at the same key form.
	must(t, s.AddMember(c, ns, "grp", []byte("m1")))
	if typ, _ := redis.String(r.Do("TYPE", "{wire},grp")); typ != "set" {
		t.Fatalf("TYPE {wire},grp = %q", typ)
	}
	if _, err := r.Do("SADD", "{wire},grp", "m2"); err != nil {
		t.Fatal(err)
	}
	ms, _ := s.GetMembers(c, ns, "grp")
	if !slices.EqualFunc(ms, [][]byte{[]byte("m1"), []byte("m2")}, bytes.Equal) {
		t.Fatalf("GetMembers = %q", ms)
	}
	keys, _ := redis.Strings(r.Do("KEYS", "*"))
	slices.Sort(keys)
	if want := []string{"{wire},grp", "{wire},k", "{wire},other"}; !slices.Equal(keys, want) {
		t.Fatalf("raw keys = %q, want %q", keys, want)
	}
}

func testWireFormatPublish(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	recv := e.rawSubscriber(e.home("ns"), "{ns},ch1", "{ns},ch2")
	expect := func(channel, data string) {
		t.Helper()
		m, ok := recv(5 * time.Second)
		if !ok || m.Channel != channel || string(m.Data) != data {
			t.Fatalf("raw message = %q %q (%v), want %q %q", m.Channel, m.Data, ok, channel, data)
		}
	}
	ev := sdlstore.ChannelEvents{"ch1": {"e1", "e2", ""}, "ch2": {"x"}}
	must(t, s.SetAndPublish(c, "ns", ev, map[string][]byte{"k": []byte("v")}))
	expect("{ns},ch1", "e1___e2___") // one message per channel, events joined
	expect("{ns},ch2", "x")

	// A condition that fails publishes nothing: the next message is the marker.
	if ok, _ := s.SetIfAndPublish(c, "ns", ev, "k", []byte("wrong"), []byte("v2")); ok {
		t.Fatal("SetIfAndPublish with wrong old value wrote")
	}
	if ok, _ := s.SetIfNotExistsAndPublish(c, "ns", ev, "k", []byte("v2")); ok {
		t.Fatal("SetIfNotExistsAndPublish wrote over an existing key")
	}
	if ok, _ := s.RemoveIfAndPublish(c, "ns", ev, "k", []byte("wrong")); ok {
		t.Fatal("RemoveIfAndPublish removed with a wrong value")
	}
	must(t, s.RemoveAndPublish(c, "ns", ev, "missing1", "missing2"))
	// RemoveAllAndPublish on a namespace without keys publishes nothing.
	recvEmpty := e.rawSubscriber(e.home("nokeys"), "{nokeys},ch1")
	must(t, s.RemoveAllAndPublish(c, "nokeys", sdlstore.ChannelEvents{"ch1": {"never"}}))
	must(t, s.SetAndPublish(c, "nokeys", sdlstore.ChannelEvents{"ch1": {"marker"}}, map[string][]byte{"m": {}}))
	if m, ok := recvEmpty(5 * time.Second); !ok || string(m.Data) != "marker" {
		t.Fatalf("RemoveAllAndPublish of an empty namespace published %q", m.Data)
	}
	must(t, s.SetAndPublish(c, "ns", sdlstore.ChannelEvents{"ch1": {"marker"}}, map[string][]byte{"m": {}}))
	expect("{ns},ch1", "marker")

	// Each successful operation publishes once per channel.
	one := sdlstore.ChannelEvents{"ch2": {"ok"}}
	steps := []func() (bool, error){
		func() (bool, error) { return s.SetIfAndPublish(c, "ns", one, "k", []byte("v"), []byte("v2")) },
		func() (bool, error) { return s.RemoveIfAndPublish(c, "ns", one, "k", []byte("v2")) },
		func() (bool, error) { return s.SetIfNotExistsAndPublish(c, "ns", one, "k", []byte("v3")) },
		func() (bool, error) { return true, s.RemoveAndPublish(c, "ns", one, "k", "missing") },
		func() (bool, error) { return true, s.RemoveAllAndPublish(c, "ns", one) },
	}
	for i, step := range steps {
		if ok, err := step(); !ok || err != nil {
			t.Fatalf("step %d = %v, %v", i, ok, err)
		}
		expect("{ns},ch2", "ok")
	}
	if keys, _ := s.FindKeys(c, "ns", "*"); len(keys) != 0 {
		t.Fatalf("RemoveAllAndPublish left %q", keys)
	}
	// An empty ChannelEvents is a plain write.
	must(t, s.SetAndPublish(c, "ns", sdlstore.ChannelEvents{}, map[string][]byte{"k": []byte("v")}))
	must(t, s.RemoveAllAndPublish(c, "ns", nil))
	must(t, s.SetAndPublish(c, "ns", sdlstore.ChannelEvents{"ch1": {"last"}}, map[string][]byte{"k": []byte("v")}))
	expect("{ns},ch1", "last")
}

// A message published by another client in the ricsdl format reaches the
// store's callback with the namespace stripped and the events split.
func testWireFormatSubscribe(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	got := make(chan []string, 4)
	must(t, s.SubscribeChannel(c, "sub", func(ch string, evs []string) {
		got <- append([]string{ch}, evs...)
	}, "chan,with,commas"))
	r := e.raw(e.home("sub"))
	if n, _ := redis.Int(r.Do("PUBLISH", "{sub},chan,with,commas", "a___b___c")); n != 1 {
		t.Fatalf("PUBLISH reached %d subscribers, want 1", n)
	}
	select {
	case m := <-got:
		if want := []string{"chan,with,commas", "a", "b", "c"}; !slices.Equal(m, want) {
			t.Fatalf("callback got %q, want %q", m, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no callback")
	}
}

func testWireFormatLock(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	l, err := s.LockResource("ns", "res", 10*time.Second)
	must(t, err)
	if l.Key() != "{ns},res" {
		t.Fatalf("Key = %q", l.Key())
	}
	if ok, err := l.Acquire(c, 0, 0); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	r := e.raw(0)
	token, _ := redis.String(r.Do("GET", "{ns},res"))
	pttl, _ := redis.Int64(r.Do("PTTL", "{ns},res"))
	if len(token) < 16 || pttl <= 9000 || pttl > 10000 {
		t.Fatalf("raw lock key: token %q, PTTL %d", token, pttl)
	}
	// Another owner's token is never released by this lock.
	if _, err := r.Do("SET", "{ns},res", "someone-else", "PX", 10000); err != nil {
		t.Fatal(err)
	}
	wantErr(t, l.Release(c), sdlstore.ErrLockNotHeld)
	if v, _ := redis.String(r.Do("GET", "{ns},res")); v != "someone-else" {
		t.Fatalf("Release deleted another owner's lock: %q", v)
	}
}
