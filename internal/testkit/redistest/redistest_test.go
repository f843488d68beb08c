package redistest

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockplus/redlock/internal/testkit/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m, nil) }

// assertAnswers fails unless node n's address is answered by the process
// n started last, known by its run id.
func assertAnswers(t *testing.T, n *Node) {
	t.Helper()
	c, err := redis.Dial("tcp", n.Addr(), redis.DialConnectTimeout(2*time.Second), redis.DialReadTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	info, err := redis.String(c.Do("INFO", "server"))
	if err != nil {
		t.Fatal(err)
	}
	if id := n.RunID(); id == "" || !strings.Contains(info, "run_id:"+id) {
		t.Fatalf("%s is answered by another server than ours (run id %q)", n.Addr(), id)
	}
}

func TestKillAndStartKeepThePort(t *testing.T) {
	n := Start(t, 1).Nodes[0]
	assertAnswers(t, n)
	port, run := n.Port, n.RunID()
	n.Kill()
	if n.Running() || n.RunID() != "" {
		t.Fatal("node still running after Kill")
	}
	n.Start()
	if n.Port != port || n.RunID() == run {
		t.Fatalf("restart: port %d run %s, want port %d and a new run than %s", n.Port, n.RunID(), port, run)
	}
	assertAnswers(t, n)
}

// Two clusters of tests running at the same time never share a node.
func TestParallelClustersShareNoNode(t *testing.T) {
	const clusters, nodes = 2, 3
	var mu sync.Mutex
	addrs, runs := map[string]bool{}, map[string]bool{}
	var up sync.WaitGroup
	up.Add(clusters)
	t.Run("group", func(t *testing.T) {
		for range clusters {
			t.Run("cluster", func(t *testing.T) {
				t.Parallel()
				done := sync.OnceFunc(up.Done)
				t.Cleanup(done) // a cluster that failed to start must not hold the other up
				c := Start(t, nodes)
				done()
				up.Wait() // both clusters are up: every node must still be ours
				for _, n := range c.Nodes {
					assertAnswers(t, n)
					mu.Lock()
					if addrs[n.Addr()] || runs[n.RunID()] {
						t.Errorf("node %s (run %s) belongs to both clusters", n.Addr(), n.RunID())
					}
					addrs[n.Addr()], runs[n.RunID()] = true, true
					mu.Unlock()
				}
			})
		}
	})
	if len(addrs) != clusters*nodes {
		t.Fatalf("%d distinct nodes, want %d", len(addrs), clusters*nodes)
	}
}

func TestStartMain(t *testing.T) {
	c, err := StartMain(2)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop() // again: a second Stop does nothing
	nodes := append([]*Node(nil), c.Nodes...)
	for _, n := range nodes {
		assertAnswers(t, n)
	}
	if nodes[0].Port == nodes[1].Port {
		t.Fatalf("both nodes on port %d", nodes[0].Port)
	}
	c.Stop()
	for _, n := range nodes {
		if n.Running() {
			t.Errorf("node %s still running after Stop", n.Addr())
		}
		if _, err := os.Stat(n.dir); !os.IsNotExist(err) {
			t.Errorf("directory %s of node %s left behind: %v", n.dir, n.Addr(), err)
		}
	}
}
