package sdlstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/sdlstore"
)

// The examples talk to a redis-server that TestMain starts; exampleURL is
// its address (a real deployment would use its own, or NewFromEnv).

func Example() {
	ctx := context.Background()
	pool, err := redlock.NewPool(exampleURL)
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	sdl, err := sdlstore.New([]redlock.Pool{pool})
	if err != nil {
		panic(err)
	}
	defer sdl.Close()

	// Stored in Redis as "{my-app},user:1" and "{my-app},user:2".
	err = sdl.Set(ctx, "my-app", map[string][]byte{
		"user:1": []byte("alice"),
		"user:2": []byte("bob"),
	})
	if err != nil {
		panic(err)
	}
	got, _ := sdl.Get(ctx, "my-app", "user:1", "user:3")
	fmt.Printf("user:1=%s, user:3 present: %v\n", got["user:1"], got["user:3"] != nil)

	// Compare-and-set, byte for byte.
	ok, _ := sdl.SetIf(ctx, "my-app", "user:1", []byte("alice"), []byte("alice2"))
	fmt.Println("replaced:", ok)

	keys, _ := sdl.FindKeys(ctx, "my-app", "user:*")
	fmt.Println(keys)
	_ = sdl.RemoveAll(ctx, "my-app")
	// Output:
	// user:1=alice, user:3 present: false
	// replaced: true
	// [user:1 user:2]
}

// A Store over the nodes of a lock factory. redlock.PoolNode stands in for
// redlockgoredis.Nodes(rdb) or redlockrueidis.Nodes(rc), which share an
// xApp's go-redis or rueidis clients the same way, but a PoolNode is no
// redlock.PubSubNode: it cannot subscribe, where their nodes can.
func ExampleNewFromNodes() {
	ctx := context.Background()
	pool, err := redlock.NewPool(exampleURL)
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	sdl, err := sdlstore.NewFromNodes([]redlock.Node{redlock.PoolNode(pool)})
	if err != nil {
		panic(err)
	}
	defer sdl.Close()

	ok, _ := sdl.SetIfNotExistsAndPublish(ctx, "my-app", sdlstore.ChannelEvents{"users": {"added"}}, "user:3", []byte("carol"))
	fmt.Println("added:", ok)
	err = sdl.SubscribeChannel(ctx, "my-app", func(string, []string) {}, "users")
	fmt.Println("subscribe:", errors.Is(err, sdlstore.ErrSubscribeUnsupported))
	_ = sdl.RemoveAll(ctx, "my-app")
	// Output:
	// added: true
	// subscribe: true
}

func ExampleStore_SubscribeChannel() {
	ctx := context.Background()
	pool, _ := redlock.NewPool(exampleURL)
	defer pool.Close()
	sdl, _ := sdlstore.New([]redlock.Pool{pool})
	defer sdl.Close()

	done := make(chan struct{})
	// Callbacks run in the store's listener goroutine.
	err := sdl.SubscribeChannel(ctx, "cells", func(channel string, events []string) {
		fmt.Println(channel, events)
		close(done)
	}, "cell-updates")
	if err != nil {
		panic(err)
	}
	// One PUBLISH of "added___changed" on "{cells},cell-updates", sent only
	// because the write happened.
	err = sdl.SetAndPublish(ctx, "cells",
		sdlstore.ChannelEvents{"cell-updates": {"added", "changed"}},
		map[string][]byte{"cell-7": []byte("up")})
	if err != nil {
		panic(err)
	}
	<-done
	_ = sdl.RemoveAll(ctx, "cells")
	// Output: cell-updates [added changed]
}

func ExampleStore_HandleEvents() {
	ctx := context.Background()
	pool, _ := redlock.NewPool(exampleURL)
	defer pool.Close()
	sdl, _ := sdlstore.New([]redlock.Pool{pool}, sdlstore.WithEventPolling())
	defer sdl.Close()

	_ = sdl.SubscribeChannel(ctx, "poll", func(string, []string) {}, "ch")
	_ = sdl.SetAndPublish(ctx, "poll", sdlstore.ChannelEvents{"ch": {"e1"}}, map[string][]byte{"k": {}})
	for {
		channel, events, ok, err := sdl.HandleEvents(ctx) // never blocks
		if err != nil {
			panic(err)
		}
		if ok {
			fmt.Println(channel, events)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = sdl.RemoveAll(ctx, "poll")
	// Output: ch [e1]
}

func ExampleStore_LockResource() {
	ctx := context.Background()
	pool, _ := redlock.NewPool(exampleURL)
	defer pool.Close()
	sdl, _ := sdlstore.New([]redlock.Pool{pool})
	defer sdl.Close()

	lock, err := sdl.LockResource("my-app", "config", 10*time.Second)
	if err != nil {
		panic(err)
	}
	// Try every 100 ms for up to 2 s.
	ok, err := lock.Acquire(ctx, 100*time.Millisecond, 2*time.Second)
	if err != nil || !ok {
		fmt.Println("not acquired:", err)
		return
	}
	v, _ := lock.ValidityTime(ctx)
	fmt.Println("held, valid for at most 10s:", v <= 10*time.Second)
	fmt.Println("released:", lock.Release(ctx) == nil)
	// Output:
	// held, valid for at most 10s: true
	// released: true
}

func ExampleNewFromEnv() {
	// DBAAS_SERVICE_HOST=dbaas DBAAS_SERVICE_PORT=6379 in a RIC pod; with
	// DBAAS_SERVICE_SENTINEL_PORT and DBAAS_MASTER_NAME set, the master is
	// found through Redis Sentinel and followed across failovers.
	sdl, err := sdlstore.NewFromEnv()
	if err != nil {
		fmt.Println("configuration:", err)
		return
	}
	defer sdl.Close()
	fmt.Println("instances:", sdl.Instances())
}

// A slow consumer: with room for two events, a third that arrives before
// HandleEvents takes any is dropped and counted, not queued without bound.
func ExampleWithEventQueue() {
	ctx := context.Background()
	pool, err := redlock.NewPool(exampleURL)
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	sdl, err := sdlstore.New([]redlock.Pool{pool}, sdlstore.WithEventPolling(), sdlstore.WithEventQueue(2))
	if err != nil {
		panic(err)
	}
	defer sdl.Close()

	_ = sdl.SubscribeChannel(ctx, "queue-demo", func(string, []string) {}, "changes")
	for _, ev := range []string{"one", "two", "three"} {
		_ = sdl.SetAndPublish(ctx, "queue-demo", sdlstore.ChannelEvents{"changes": {ev}}, map[string][]byte{"k": []byte(ev)})
	}
	for sdl.DroppedEvents() == 0 { // the subscriber reads the third event in the background
		time.Sleep(time.Millisecond)
	}
	fmt.Println("dropped:", sdl.DroppedEvents())
	for {
		_, events, ok, _ := sdl.HandleEvents(ctx)
		if !ok {
			break
		}
		fmt.Println("handled:", events)
	}
	// Output:
	// dropped: 1
	// handled: [one]
	// handled: [two]
}

func ExampleWithObserver() {
	var mu sync.Mutex
	ops := map[string]int{}
	obs := sdlstore.Observer{
		Operation: func(_ context.Context, e sdlstore.OperationEvent) {
			mu.Lock()
			defer mu.Unlock()
			ops[e.Op+" "+string(e.Kind)]++
		},
	}
	pool, err := redlock.NewPool(exampleURL)
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	s, err := sdlstore.New([]redlock.Pool{pool}, sdlstore.WithObserver(obs))
	if err != nil {
		panic(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.Set(ctx, "example-observed", map[string][]byte{"k": []byte("v")}); err != nil {
		panic(err)
	}
	if _, err := s.Get(ctx, "example-observed", "k"); err != nil {
		panic(err)
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Println(ops)
	// Output: map[get :1 set :1]
}
