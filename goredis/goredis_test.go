package redlockgoredis_test

import (
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockplus/redlock"
	redlockgoredis "github.com/redlockplus/redlock/goredis"
	"github.com/redlockplus/redlock/internal/testkit/conformance"
	"github.com/redlockplus/redlock/internal/testkit/leakcheck"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
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

// goRedis makes one go-redis client per node, with the context deadlines
// that the package doc asks for.
var goRedis = conformance.Client{
	Name:  "go-redis",
	Nodes: func(t *testing.T, addrs []string) []redlock.Node { return goRedisNodes(t, addrs) },
}

func goRedisNodes(tb testing.TB, addrs []string) []redlock.Node {
	clients := make([]redis.UniversalClient, len(addrs))
	for i, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: true})
		tb.Cleanup(func() { c.Close() })
		clients[i] = c
	}
	return redlockgoredis.Nodes(clients...)
}

func TestConformance(t *testing.T) { conformance.Run(t, goRedis) }

func TestInterop(t *testing.T) {
	t.Run("go-redis holds, redigo waits", func(t *testing.T) { conformance.Interop(t, goRedis, conformance.Redigo) })
	t.Run("redigo holds, go-redis waits", func(t *testing.T) { conformance.Interop(t, conformance.Redigo, goRedis) })
}

func TestNilClient(t *testing.T) {
	var c *redis.Client
	if n := redlockgoredis.Nodes(c)[0]; n != nil {
		t.Fatalf("Nodes(nil) = %v, want a nil node", n)
	}
}

// BenchmarkParallel is the bench tool's W2 over go-redis clients and over
// the redigo path: run it with -benchmem, and with -cpuprofile to see where
// the adapter spends its time.
func BenchmarkParallel(b *testing.B) { conformance.BenchParallel(b, "go-redis", goRedisNodes) }

// BenchmarkSequential is BenchmarkParallel with one goroutine (the bench
// tool's W1). Its CPU times include the Go scheduler's spinning between
// round trips; its commands and allocations per cycle are exact.
func BenchmarkSequential(b *testing.B) { conformance.BenchSequential(b, "go-redis", goRedisNodes) }
