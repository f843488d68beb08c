package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

func TestFactoryDo(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	f, err := redlock.NewFactory(pools, redlock.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ran := false
	err = f.Do(ctx, "job", func(ctx context.Context) error {
		ran = true
		if holders := countHolders(t, c, "job"); holders < 2 {
			t.Errorf("fn runs with the key on %d nodes, below the quorum", holders)
		}
		return nil
	})
	if err != nil || !ran {
		t.Fatalf("Do = %v, ran %v", err, ran)
	}
	waitFor(t, 2*time.Second, "Do's release on every node", func() bool { return countHolders(t, c, "job") == 0 })
	boom := errors.New("boom")
	if err := f.Do(ctx, "job", func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Do returned %v, want fn's error", err)
	}
	waitFor(t, 2*time.Second, "the release after fn failed", func() bool { return countHolders(t, c, "job") == 0 })
	if err := f.Do(ctx, "job", nil); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("Do(nil fn) = %v", err)
	}
}

// TestFactoryDoCancelsOnLoss steals the lock while fn runs: fn's context is
// cancelled with ErrLockLost and Do reports the loss.
func TestFactoryDoCancelsOnLoss(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 20*time.Second)
	f, _ := redlock.NewFactory(pools, redlock.WithTTL(time.Second))
	defer f.Close()
	err := f.Do(ctx, "stolen", func(ctx context.Context) error {
		for i := range 3 {
			c.Nodes[i].Do("DEL", "stolen")
		}
		select {
		case <-ctx.Done():
			if !errors.Is(context.Cause(ctx), redlock.ErrLockLost) {
				t.Errorf("cause = %v, want ErrLockLost", context.Cause(ctx))
			}
			return ctx.Err()
		case <-time.After(5 * time.Second):
			t.Error("fn's context not cancelled after the lock was lost")
			return nil
		}
	})
	if !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Do = %v, want ErrLockLost", err)
	}
}

func TestFactoryCloseReleasesAndStops(t *testing.T) {
	c, pools := cluster(t, 3)
	ctx := ctxT(t, 10*time.Second)
	f, _ := redlock.NewFactory(pools, redlock.WithTTL(time.Second))
	a := f.NewLock("a")
	b := f.NewRLock("b", redlock.WithAutoextend(true))
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if rawGet(t, c, 0, name) != "" {
			t.Fatalf("Close left lock %s on the nodes", name)
		}
	}
	<-a.Done()
	if !errors.Is(a.Err(), redlock.ErrClosed) {
		t.Fatalf("Err after Close = %v, want ErrClosed", a.Err())
	}
	if err := a.Release(ctx); !errors.Is(err, redlock.ErrClosed) {
		t.Fatalf("Release after Close = %v, want ErrClosed", err)
	}
	if _, err := f.NewLock("c").Acquire(ctx); !errors.Is(err, redlock.ErrClosed) {
		t.Fatalf("Acquire on a closed factory = %v, want ErrClosed", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

// TestFactoryCloseEndsBlockedAcquire: an Acquire blocked on a held name
// returns ErrClosed when its factory closes, though its retry delay is long.
func TestFactoryCloseEndsBlockedAcquire(t *testing.T) {
	_, pools := cluster(t, 3)
	ctx := ctxT(t, 20*time.Second)
	holder, _ := redlock.NewLock("blocked", pools, redlock.WithAutoextend(false))
	if _, err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	defer holder.Release(ctx)
	f, _ := redlock.NewFactory(pools, redlock.WithRetryDelay(time.Minute))
	errc := make(chan error, 1)
	go func() {
		_, err := f.NewLock("blocked").Acquire(ctx)
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond)
	f.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, redlock.ErrClosed) {
			t.Fatalf("blocked Acquire after Close = %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocked Acquire did not return after Close")
	}
}
