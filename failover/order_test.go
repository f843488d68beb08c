package failover

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/redlocktest"
)

// TestOneOrderOnEveryNode checks that the attempts of concurrent clients of
// one factory reach every node in the same order, as the nodes' MONITOR
// streams show. Under a minority fault that order is what keeps contenders
// from splitting the nodes between them: an attempt that took some of the
// reachable nodes but not a quorum waits the node timeout for the missing
// ones while it holds its keys, and such attempts then kept each other out
// for a whole fault window (scenario 11's partition of nodes 3 and 4).
func TestOneOrderOnEveryNode(t *testing.T) {
	c := redlocktest.Start(t, 3)
	monitors := make([]*monitor, c.Len())
	for i, addr := range c.Addrs() {
		monitors[i] = startMonitor(t, addr, "order:")
	}
	f := factory(t, c.Pools(), redlock.WithTTL(10*time.Second))
	const clients, rounds = 16, 20
	var wg sync.WaitGroup
	for g := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			name := fmt.Sprintf("order:%d", g%3)
			for range rounds {
				l := f.NewLock(name)
				if _, err := l.TryAcquire(ctx); err == nil {
					_ = l.Release(ctx)
				}
			}
		}()
	}
	wg.Wait()
	if err := f.Close(); err != nil { // every SET written
		t.Fatal(err)
	}
	seqs := make([][]string, len(monitors))
	for i, m := range monitors {
		seqs[i] = m.wait(t, clients*rounds)
	}
	for i := 1; i < len(seqs); i++ {
		if !slices.Equal(seqs[i], seqs[0]) {
			t.Errorf("node %d ran the %d attempts in another order than node 0 (first difference at attempt %d)",
				i, len(seqs[i]), firstDifference(seqs[0], seqs[i]))
		}
	}
}

// monitor collects the tokens of the SETs of keys with a prefix that a
// node runs, in its order, from the node's MONITOR stream.
type monitor struct {
	conn   redis.Conn
	mu     sync.Mutex
	tokens []string
	done   chan struct{}
}

func startMonitor(t *testing.T, addr, prefix string) *monitor {
	t.Helper()
	conn, err := redis.Dial("tcp", addr, redis.DialConnectTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Do("MONITOR"); err != nil {
		t.Fatal(err)
	}
	m := &monitor{conn: conn, done: make(chan struct{})}
	go m.read(`"SET" "` + prefix)
	t.Cleanup(func() {
		conn.Close()
		<-m.done
	})
	return m
}

// read takes the token, the third field, of every line that has mark.
func (m *monitor) read(mark string) {
	defer close(m.done)
	for {
		line, err := redis.String(m.conn.Receive())
		if err != nil {
			return
		}
		_, cmd, ok := strings.Cut(line, "] ")
		if !ok || !strings.HasPrefix(cmd, mark) {
			continue
		}
		if f := strings.Fields(cmd); len(f) > 2 {
			m.mu.Lock()
			m.tokens = append(m.tokens, f[2])
			m.mu.Unlock()
		}
	}
}

// wait returns the tokens once n were seen, failing the test after 10 s.
func (m *monitor) wait(t *testing.T, n int) []string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		m.mu.Lock()
		got := slices.Clone(m.tokens)
		m.mu.Unlock()
		if len(got) >= n || time.Now().After(deadline) {
			if len(got) != n {
				t.Fatalf("the node ran %d attempts, want %d", len(got), n)
			}
			return got
		}
	}
}

func firstDifference(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
