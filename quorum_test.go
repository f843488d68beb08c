package redlock_test

import (
	"errors"
	"fmt"
	"math/bits"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// TestQuorumMasks pre-clogs every subset of the nodes with another holder's
// token and checks that an attempt succeeds iff the free nodes reach the
// quorum N/2+1, that a success writes the token on every free node, and that
// a failure leaves none of its keys behind and never touches the foreign ones.
// An attempt that gave up on a silent free node is tried again (untilHeard).
func TestQuorumMasks(t *testing.T) {
	for _, n := range []int{3, 5} {
		for _, path := range transports {
			t.Run(fmt.Sprintf("%d nodes %s", n, path.name), func(t *testing.T) {
				c, pools := cluster(t, n)
				newLock := path.lockMaker(t, pools)
				ctx := ctxT(t, 60*time.Second)
				quorum := n/2 + 1
				for mask := 0; mask < 1<<n; mask++ {
					name := fmt.Sprintf("mask-%d", mask)
					for i := range n {
						if mask&(1<<i) != 0 {
							c.Nodes[i].Do("SET", name, "foreign", "PX", 60000)
						}
					}
					l := newLock(name, redlock.WithRetryTimes(0), redlock.WithAutoextend(false))
					free := n - bits.OnesCount(uint(mask))
					err := untilHeard(func() error {
						_, err := l.TryAcquire(ctx)
						return err
					}, func() { onlyForeign(t, c, name, mask) })
					if want := free >= quorum; (err == nil) != want {
						t.Fatalf("mask %0*b: %d free nodes, quorum %d: err = %v, want success %v", n, mask, free, quorum, err, want)
					}
					if err != nil && !errors.Is(err, redlock.ErrNotAcquired) {
						t.Fatalf("mask %0*b: %v does not match ErrNotAcquired", n, mask, err)
					}
					if err == nil {
						waitFor(t, 2*time.Second, "the token on every free node", func() bool {
							for i := range n {
								if mask&(1<<i) == 0 && rawGet(t, c, i, name) != l.Token() {
									return false
								}
							}
							return true
						})
						if err := l.Release(ctx); err != nil {
							t.Fatalf("mask %0*b: release: %v", n, mask, err)
						}
					}
					onlyForeign(t, c, name, mask)
				}
			})
		}
	}
}

// onlyForeign waits until name holds "foreign" on the nodes of mask and
// nothing elsewhere: an attempt's keys are gone.
func onlyForeign(t *testing.T, c *redistest.Cluster, name string, mask int) {
	t.Helper()
	waitFor(t, 2*time.Second, "only the foreign keys to remain", func() bool {
		for i := range c.Nodes {
			want := ""
			if mask&(1<<i) != 0 {
				want = "foreign"
			}
			if rawGet(t, c, i, name) != want {
				return false
			}
		}
		return true
	})
}

// TestQuorumOption checks a stricter quorum: all 3 of 3 (redlock_plus's
// max(3, N/2+1)) fails with one node clogged, where the default 2 succeeds.
func TestQuorumOption(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	c.Nodes[0].Do("SET", "strict", "foreign", "PX", 60000)
	strict, _ := redlock.NewLock("strict", pools, redlock.WithQuorum(3), redlock.WithRetryTimes(0))
	if _, err := strict.TryAcquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("quorum 3 with a clogged node: %v, want ErrNotAcquired", err)
	}
	waitFor(t, 2*time.Second, "the failed attempt's cleanup", func() bool {
		return rawGet(t, c, 1, "strict") == "" && rawGet(t, c, 2, "strict") == ""
	})
	relaxed, _ := redlock.NewLock("strict", pools, redlock.WithRetryTimes(0), redlock.WithAutoextend(false))
	if _, err := relaxed.TryAcquire(ctx); err != nil {
		t.Fatalf("default quorum 2 with a clogged node: %v", err)
	}
	if err := relaxed.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
