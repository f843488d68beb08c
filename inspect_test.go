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
