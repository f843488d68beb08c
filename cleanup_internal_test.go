package redlock

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestCleanerDropsWhatDoesNotFit fills one node's cleanup queue past its
// bound: the surplus is dropped, counted and logged, and what fitted is
// still deleted once it may go.
func TestCleanerDropsWhatDoesNotFit(t *testing.T) {
	c, pools := poolsOf(t, 3)
	var logs bytes.Buffer
	f, err := NewFactory(pools, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cl := f.nodes[0].cleaner
	hold := make(chan struct{}) // a "SET still running" that keeps the queue full
	const surplus = 5
	until := time.Now().Add(time.Minute)
	for i := range maxCleanupQueue + surplus {
		key := fmt.Sprintf("k%d", i)
		if i < 3 {
			c.Nodes[0].Do("SET", key, "t")
		}
		cl.add(discard{key: key, token: "t", until: until}, false, hold)
	}
	cl.add(discard{key: "k0", token: "t", until: until}, true, hold) // a duplicate is merged, not dropped
	if got := cl.dropped.Load(); got != surplus {
		t.Fatalf("dropped %d deletes, want %d", got, surplus)
	}
	if !strings.Contains(logs.String(), "cleanup queue full") {
		t.Fatalf("no log line for the drops: %q", logs.String())
	}
	close(hold)
	cl.waitIdle()
	for i := range 3 {
		if v := c.Nodes[0].Do("GET", fmt.Sprintf("k%d", i)); v != nil {
			t.Errorf("k%d survived its queued delete: %v", i, v)
		}
	}
}
