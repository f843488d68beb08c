package redlockotel_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redlockplus/redlock/internal/testkit/leakcheck"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// nodeURLs are the redis:// URLs of the three redis-server nodes the
// examples use, started by TestMain on free ports.
var nodeURLs []string

func TestMain(m *testing.M) {
	var examples *redistest.Cluster
	if redistest.Available() {
		var err error
		if examples, err = redistest.StartMain(3); err != nil {
			fmt.Fprintf(os.Stderr, "nodes of the examples: %v\n", err)
			os.Exit(1)
		}
		nodeURLs = examples.URLs()
	}
	code := m.Run()
	if examples != nil {
		examples.Stop()
	}
	if code == 0 {
		// A lock without a factory may retry a cleanup for up to 7 node
		// timeouts; these tests use factories only.
		if err := leakcheck.Find(10 * time.Second); err != nil {
			fmt.Fprintf(os.Stderr, "goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
