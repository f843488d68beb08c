package redlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

func TestInspect(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	f, _ := redlock.NewFactory(pools, redlock.WithTTL(10*time.Second))
	defer f.Close()
	in, err := f.Inspect(ctx, "inspected")
	if err != nil || in.Held() || len(in.Nodes) != 3 || in.Quorum != 2 {
		t.Fatalf("free name: %+v %v", in, err)
	}
	l := f.NewLock("inspected")
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	c.Nodes[2].Kill()
	in, err = f.Inspect(ctx, "inspected")
	if err != nil || !in.Held() || in.Holder != l.Token() || in.HolderTTL <= 0 || in.HolderTTL > 10*time.Second {
		t.Fatalf("held name: %+v %v", in, err)
	}
	var ne *redlock.NodeError
	if in.Nodes[0].Token != l.Token() || !errors.As(in.Nodes[2].Err, &ne) || in.Nodes[2].Addr != c.Nodes[2].Addr() {
		t.Fatalf("per-node states: %+v", in.Nodes)
	}
	if _, err := f.Inspect(ctx, ""); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("empty name: %v", err)
	}
	l.Release(ctx)
}

// TestInspectShowsFences: each node reports the last token committed on
// it, and 0 where none was.
func TestInspectShowsFences(t *testing.T) {
	_, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	f, _ := redlock.NewFactory(pools, redlock.WithTTL(10*time.Second), redlock.WithFencing(true))
	defer f.Close()
	l := f.NewLock("fenced-inspected")
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	in, err := f.Inspect(ctx, "fenced-inspected")
	if err != nil {
		t.Fatal(err)
	}
	committed := 0
	for _, st := range in.Nodes {
		if st.Fence == l.Fence() {
			committed++
		}
	}
	if committed < in.Quorum {
		t.Fatalf("token %d on %d nodes, want a quorum: %+v", l.Fence(), committed, in.Nodes)
	}
	if in, err = f.Inspect(ctx, "never-fenced"); err != nil || in.Nodes[0].Fence != 0 {
		t.Fatalf("unfenced name: %+v %v", in, err)
	}
}
