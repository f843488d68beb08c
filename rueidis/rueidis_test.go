package redlockrueidis_test

import (
	"os"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/conformance"
	"github.com/redlockplus/redlock/internal/testkit/leakcheck"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
	redlockrueidis "github.com/redlockplus/redlock/rueidis"
)

// exampleAddrs are the nodes of the runnable examples.
var exampleAddrs []string

func TestMain(m *testing.M) {
	examples, err := redistest.StartMain(3)
	if err != nil {
		os.Stderr.WriteString("nodes of the examples: " + err.Error() + "\n")
		os.Exit(1)
	}
	exampleAddrs = examples.Addrs()
	code := m.Run()
	examples.Stop()
	if code == 0 {
		if err := leakcheck.Find(5 * time.Second); err != nil {
			os.Stderr.WriteString("goroutine leak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

// rueidisClient makes one rueidis client per node.
var rueidisClient = conformance.Client{
	Name:  "rueidis",
	Nodes: func(t *testing.T, addrs []string) []redlock.Node { return rueidisNodes(t, addrs) },
}

func rueidisNodes(tb testing.TB, addrs []string) []redlock.Node {
	clients := make([]rueidis.Client, len(addrs))
	for i, a := range addrs {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{a}, ForceSingleClient: true, DisableCache: true})
		if err != nil {
			tb.Fatalf("rueidis.NewClient: %v", err)
		}
		tb.Cleanup(c.Close)
		clients[i] = c
	}
	return redlockrueidis.Nodes(clients...)
}

func TestConformance(t *testing.T) { conformance.Run(t, rueidisClient) }

func TestInterop(t *testing.T) {
	t.Run("rueidis holds, redigo waits", func(t *testing.T) { conformance.Interop(t, rueidisClient, conformance.Redigo) })
	t.Run("redigo holds, rueidis waits", func(t *testing.T) { conformance.Interop(t, conformance.Redigo, rueidisClient) })
}

func TestNilClient(t *testing.T) {
	if n := redlockrueidis.Nodes(nil)[0]; n != nil {
		t.Fatalf("Nodes(nil) = %v, want a nil node", n)
	}
}

// BenchmarkParallel is the bench tool's W2 over rueidis clients and over
// the redigo path: run it with -benchmem, and with -cpuprofile to see where
// the adapter spends its time.
func BenchmarkParallel(b *testing.B) { conformance.BenchParallel(b, "rueidis", rueidisNodes) }

// BenchmarkSequential is BenchmarkParallel with one goroutine (the bench
// tool's W1). Its CPU times include the Go scheduler's spinning between
// round trips; its commands and allocations per cycle are exact.
func BenchmarkSequential(b *testing.B) { conformance.BenchSequential(b, "rueidis", rueidisNodes) }
