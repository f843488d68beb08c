package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/redlockplus/redlock"
)

// nodeURLs are the redis:// URLs of three redis-server nodes, such as
// "redis://10.0.0.1:6379". Here TestMain starts them on free loopback ports.
var nodeURLs []string

func Example() {
	f, err := redlock.NewFactoryFromURLs(nodeURLs)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	ctx := context.Background()
	lock := f.NewLock("reports:nightly")
	if _, err := lock.Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	defer lock.Release(ctx)

	fmt.Println("held by one process; extended in the background until Release")
	// Output: held by one process; extended in the background until Release
}

func ExampleFactory_Do() {
	f, err := redlock.NewFactoryFromURLs(nodeURLs, redlock.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	err = f.Do(context.Background(), "migrations", func(ctx context.Context) error {
		// ctx is cancelled if the lock is lost while this runs.
		fmt.Println("running migrations")
		return nil
	})
	fmt.Println("done:", err)
	// Output:
	// running migrations
	// done: <nil>
}

func ExampleLock_TryAcquire() {
	f, err := redlock.NewFactoryFromURLs(nodeURLs, redlock.WithRetryTimes(1), redlock.WithRetryDelay(10*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()

	first := f.NewLock("printer")
	if _, err := first.Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	_, err = f.NewLock("printer").TryAcquire(ctx)
	fmt.Println("second holder:", errors.Is(err, redlock.ErrNotAcquired))
	first.Release(ctx)
	// Output: second holder: true
}

func ExampleLock_Done() {
	f, err := redlock.NewFactoryFromURLs(nodeURLs, redlock.WithTTL(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()

	lock := f.NewLock("leader")
	if _, err := lock.Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	work := time.After(50 * time.Millisecond)
	select {
	case <-lock.Done(): // lost: stop acting as the holder at once
		fmt.Println("lost:", lock.Err())
	case <-work:
		fmt.Println("work finished while holding the lock")
	}
	lock.Release(ctx)
	// Output: work finished while holding the lock
}

func ExampleRLock() {
	f, err := redlock.NewFactoryFromURLs(nodeURLs)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()

	r := f.NewRLock("config")
	r.Acquire(ctx) // takes the lock on the nodes
	r.Acquire(ctx) // nested: re-checks it and counts
	fmt.Println("level", r.Level())
	r.Release(ctx) // level 1: still held
	r.Release(ctx) // level 0: released on the nodes
	fmt.Println("level", r.Level())
	// Output:
	// level 2
	// level 0
}

func ExampleLock_CheckTimes() {
	f, err := redlock.NewFactoryFromURLs(nodeURLs, redlock.WithTTL(30*time.Second), redlock.WithAutoextend(false))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()

	lock := f.NewLock("inventory")
	if _, err := lock.Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	defer lock.Release(ctx)
	held, times, err := lock.CheckTimes(ctx)
	fmt.Println(held, len(times), err)
	// Output: true 3 <nil>
}

func ExampleWithObserver() {
	var mu sync.Mutex
	outcomes := map[string]int{}
	obs := redlock.Observer{
		AcquireDone: func(_ context.Context, e redlock.AcquireEvent) {
			mu.Lock()
			defer mu.Unlock()
			outcomes[e.Outcome.String()]++
		},
	}
	f, err := redlock.NewFactoryFromURLs(nodeURLs, redlock.WithObserver(obs), redlock.WithRetryTimes(0))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	ctx := context.Background()
	held := f.NewLock("reports:weekly")
	if _, err := held.Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	defer held.Release(ctx)
	if _, err := f.NewLock("reports:weekly").TryAcquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		log.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Println(outcomes)
	// Output: map[acquired:1 refused:1]
}

func ExampleSemaphore() {
	f, err := redlock.NewFactoryFromURLs(nodeURLs, redlock.WithRetryTimes(0))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	ctx := context.Background()

	// At most two converters run at once, whichever processes they are in.
	a, b, c := f.NewSemaphore("converters", 2), f.NewSemaphore("converters", 2), f.NewSemaphore("converters", 2)
	a.Acquire(ctx)
	b.Acquire(ctx)
	_, err = c.TryAcquire(ctx)
	fmt.Println("third:", errors.Is(err, redlock.ErrNotAcquired))
	a.Release(ctx)
	_, err = c.TryAcquire(ctx)
	fmt.Println("third after a release:", err)
	b.Release(ctx)
	c.Release(ctx)
	// Output:
	// third: true
	// third after a release: <nil>
}

func ExampleElection() {
	f, err := redlock.NewFactoryFromURLs(nodeURLs, redlock.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()

	e := f.NewElection("scheduler")
	if err := e.Campaign(ctx, "host-1"); err != nil { // blocks until leading
		log.Fatal(err)
	}
	leader, _ := f.NewElection("scheduler").Leader(ctx)
	fmt.Println("leader:", leader)
	select {
	case <-e.Done(): // leadership lost: stop leading at once
		fmt.Println("lost:", e.Err())
	default:
		fmt.Println("leading")
	}
	e.Resign(ctx)
	// Output:
	// leader: host-1
	// leading
}

func ExampleMultiLock() {
	f, err := redlock.NewFactoryFromURLs(nodeURLs, redlock.WithRetryTimes(0))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()

	// A transfer needs both accounts, or neither.
	m := f.NewMultiLock([]string{"account:42", "account:7"})
	if _, err := m.Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	_, err = f.NewLock("account:7").TryAcquire(ctx)
	fmt.Println("account:7 taken:", errors.Is(err, redlock.ErrNotAcquired))
	fmt.Println(m.Release(ctx))
	// Output:
	// account:7 taken: true
	// <nil>
}

func ExampleReadLock() {
	f, err := redlock.NewFactoryFromURLs(nodeURLs, redlock.WithRetryTimes(0))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()

	r1, r2 := f.NewReadLock("catalog"), f.NewReadLock("catalog")
	r1.Acquire(ctx)
	_, err = r2.Acquire(ctx)
	fmt.Println("two readers:", err)
	_, err = f.NewWriteLock("catalog").TryAcquire(ctx)
	fmt.Println("writer while reading:", errors.Is(err, redlock.ErrNotAcquired))
	r1.Release(ctx)
	r2.Release(ctx)
	// Output:
	// two readers: <nil>
	// writer while reading: true
}

func ExampleWriteLock() {
	f, err := redlock.NewFactoryFromURLs(nodeURLs, redlock.WithRetryTimes(0))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()

	w := f.NewWriteLock("catalog")
	if _, err := w.Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	_, err = f.NewReadLock("catalog").TryAcquire(ctx)
	fmt.Println("reader while writing:", errors.Is(err, redlock.ErrNotAcquired))
	fmt.Println(w.Release(ctx))
	// Output:
	// reader while writing: true
	// <nil>
}
