package conformance

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// BenchNodes makes one node per address of a client, closed by
// tb.Cleanup, as Client.Nodes does for a test.
type BenchNodes func(tb testing.TB, addrs []string) []redlock.Node

// BenchParallel runs the bench tool's W2 over the nodes of the client
// named name and, for comparison, over Redigo's, each on 3 servers of its own: 64 goroutines,
// each acquiring and releasing a key of its own. Besides time and
// allocations per cycle it reports what the speed of a shared machine
// hides: the commands and the socket reads and writes the servers made per
// cycle (INFO stats), which tell whether the client sends several locks'
// commands at once, and the CPU time per cycle of this process and of the
// servers.
func BenchParallel(b *testing.B, name string, nodes BenchNodes) {
	benchCycles(b, name, nodes, 64)
}

// BenchSequential is BenchParallel with one goroutine, the bench tool's
// W1.
func BenchSequential(b *testing.B, name string, nodes BenchNodes) {
	benchCycles(b, name, nodes, 1)
}

// benchCycles runs goroutines cycle loops over Redigo's nodes and the
// named client's.
func benchCycles(b *testing.B, name string, nodes BenchNodes, goroutines int) {
	clients := []struct {
		name  string
		nodes BenchNodes
	}{{Redigo.Name, redigoNodes}, {name, nodes}}
	for _, c := range clients {
		b.Run(c.name, func(b *testing.B) {
			cl := redistest.Start(b, 3)
			run(b, cl, c.nodes(b, cl.Addrs()), goroutines)
		})
	}
}

// run measures goroutines cycle loops over nodes, which reach cl.
func run(b *testing.B, cl *redistest.Cluster, nodes []redlock.Node, goroutines int) {
	f, err := redlock.NewFactoryFromNodes(nodes, redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(time.Second), redlock.WithAutoextend(false))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	cycle := func(l *redlock.Lock) {
		if _, err := l.Acquire(ctx); err != nil {
			b.Error(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Error(err)
		}
	}
	cycle(f.NewLock("warm-up")) // loads the scripts and dials
	before := serverStats(b, cl)
	cpu := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	if goroutines == 1 {
		l := f.NewLock("key")
		for range b.N {
			cycle(l)
		}
	} else {
		var id atomic.Int64
		b.SetParallelism(max(1, goroutines/runtime.GOMAXPROCS(0))) // RunParallel starts parallelism × GOMAXPROCS goroutines
		b.RunParallel(func(pb *testing.PB) {
			l := f.NewLock(fmt.Sprintf("key-%d", id.Add(1)))
			for pb.Next() {
				cycle(l)
			}
		})
	}
	b.StopTimer()
	cpu = cpuTime() - cpu
	after := serverStats(b, cl)
	n := float64(b.N)
	b.ReportMetric(float64(after.commands-before.commands)/n, "cmds/op")
	b.ReportMetric(float64(after.reads-before.reads)/n, "srv-reads/op")
	b.ReportMetric(float64(after.writes-before.writes)/n, "srv-writes/op")
	b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/op")
	b.ReportMetric((after.cpu-before.cpu)*1e6/n, "srv-cpu-µs/op")
}

// stats are the counters of every node of a cluster, summed.
type stats struct {
	commands, reads, writes int64
	cpu                     float64 // seconds
}

// serverStats reads INFO stats and INFO cpu of every node.
func serverStats(b *testing.B, cl *redistest.Cluster) stats {
	var s stats
	for _, nd := range cl.Nodes {
		info := string(nd.Do("INFO", "stats").([]byte)) + string(nd.Do("INFO", "cpu").([]byte))
		for _, line := range strings.Split(info, "\r\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			switch k {
			case "total_commands_processed":
				s.commands += atoi(b, v)
			case "total_reads_processed":
				s.reads += atoi(b, v)
			case "total_writes_processed":
				s.writes += atoi(b, v)
			case "used_cpu_sys", "used_cpu_user":
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatalf("INFO %s: %v", k, err)
				}
				s.cpu += f
			}
		}
	}
	return s
}

func atoi(b *testing.B, v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		b.Fatalf("INFO: %v", err)
	}
	return n
}

// cpuTime is the user and system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
