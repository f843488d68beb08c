package redlock

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// TestExtendManyCarriesTTLRuns: a batch of locks of two TTLs carries each
// TTL once per run of locks in turn, and the node extends each key by its
// own TTL; a key held by another token is left as it is.
func TestExtendManyCarriesTTLRuns(t *testing.T) {
	c, pools := poolsOf(t, 3)
	f, err := NewFactory(pools, WithLossDetection(false))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type key struct{ name, token, ttl string }
	keys := []key{{"a", "1", "40000"}, {"b", "2", "40000"}, {"c", "3", "90000"}, {"d", "4", "40000"}}
	for _, k := range keys {
		c.Nodes[0].Do("SET", k.name, k.token, "PX", 1000)
	}
	c.Nodes[0].Do("SET", "b", "someone else's", "PX", 1000)

	cmd := extendManyCmd(nil, judgeFlags(len(keys)), len(keys), func(i int) (any, any, any) {
		return keys[i].name, keys[i].token, keys[i].ttl
	})
	want := []any{extendManyScript.hashArg, 4, "a", "b", "c", "d", "1", "2", "3", "4", 2, "40000", 1, "90000", 1, "40000"}
	if !reflect.DeepEqual(cmd.args, want) {
		t.Fatalf("arguments %v, want %v", cmd.args, want)
	}

	rep := f.nodes[0].do(context.Background(), cmd, 5*time.Second)
	if rep.err != nil {
		t.Fatal(rep.err)
	}
	if flags := string(rep.raw.([]byte)); flags != "1011" {
		t.Fatalf("flags %q, want 1011 (b is someone else's)", flags)
	}
	for _, k := range []struct {
		name     string
		min, max time.Duration
	}{{"a", 39 * time.Second, 40 * time.Second}, {"b", 0, time.Second}, {"c", 89 * time.Second, 90 * time.Second}, {"d", 39 * time.Second, 40 * time.Second}} {
		ms, err := redis.Int64(c.Nodes[0].Do("PTTL", k.name), nil)
		if got := time.Duration(ms) * time.Millisecond; err != nil || got < k.min || got > k.max {
			t.Errorf("PTTL %s = %v, %v; want between %v and %v", k.name, got, err, k.min, k.max)
		}
	}
}
