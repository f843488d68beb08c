package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

// contestedAttempt: five nodes, two of them hung, and another client's
// key on a third. An attempt then gets two yeses and a refusal, and could
// win only if both hung nodes said yes. Waiting the node timeout for them
// would keep its keys on the two free nodes all that while, and attempts
// that split the free nodes between them keep each other out for as long
// as the minority is silent (failover scenario 11 over go-redis: no
// acquisition in a 1.5 s partition window). The attempt must give up
// long before the node timeout and leave no key behind.
func contestedAttempt(t *testing.T, c Client) {
	cl := redistest.Start(t, 5)
	ctx := testContext(t)
	const nodeTimeout = 10 * time.Second
	f := c.factory(t, cl.Addrs(), redlock.WithNodeTimeout(nodeTimeout), redlock.WithTTL(30*time.Second),
		redlock.WithAutoextend(false), redlock.WithRetryTimes(0))
	l := f.NewLock("contested")
	warmUp(t, ctx, cl, l, "contested")
	cl.Nodes[2].Do("SET", "contested", "another-client")
	for _, nd := range cl.Nodes[3:] {
		nd.Pause()
		defer nd.Resume()
	}
	start := time.Now()
	_, err := l.TryAcquire(ctx)
	took := time.Since(start)
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire with two hung nodes and one held by another client: %v, want ErrNotAcquired", err)
	}
	if took >= nodeTimeout/2 {
		t.Fatalf("TryAcquire took %v (%v): a contested attempt waited for the hung nodes (node timeout %v)", took, err, nodeTimeout)
	}
	if !errors.Is(err, redlock.ErrContested) {
		t.Errorf("TryAcquire: %v, want the hung nodes' errors to match ErrContested", err)
	}
	// The attempt's keys go from the free nodes now, and from the hung
	// ones once they run again; the other client's key stays.
	for _, nd := range cl.Nodes[3:] {
		nd.Resume()
	}
	waitHolders(t, cl, "contested", 1)
}
