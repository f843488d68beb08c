package sdlstore_test

import (
	"context"
	"fmt"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/sdlstore"
)

func ExampleStore_Namespaces() {
	ctx := context.Background()
	pool, _ := redlock.NewPool(exampleURL)
	defer pool.Close()
	sdl, _ := sdlstore.New([]redlock.Pool{pool})
	defer sdl.Close()

	_ = sdl.Set(ctx, "inventory", map[string][]byte{"cell-1": {}, "cell-2": {}})
	_ = sdl.AddMember(ctx, "alarms", "active", []byte("a1"))
	list, _ := sdl.Namespaces(ctx)
	for _, n := range list {
		fmt.Printf("%s: %d keys on instance %d\n", n.Name, n.Keys, n.Instance)
	}
	_ = sdl.RemoveAll(ctx, "inventory")
	_ = sdl.RemoveAll(ctx, "alarms")
	// Output:
	// alarms: 1 keys on instance 0
	// inventory: 2 keys on instance 0
}

func ExampleStore_Health() {
	ctx := context.Background()
	pool, _ := redlock.NewPool(exampleURL)
	defer pool.Close()
	sdl, _ := sdlstore.New([]redlock.Pool{pool}) // WithNodeCount(3) would want 2 replicas
	defer sdl.Close()

	h, _ := sdl.Health(ctx)
	in := h.Instances[0]
	fmt.Println("healthy:", h.Healthy(), "role:", in.Role, "replicas:", len(in.Replicas))
	fmt.Println("DBaaS module commands:", in.ModuleCommands)
	// Output:
	// healthy: true role: master replicas: 0
	// DBaaS module commands: []
}

func ExampleStore_Statistics() {
	ctx := context.Background()
	pool, _ := redlock.NewPool(exampleURL)
	defer pool.Close()
	sdl, _ := sdlstore.New([]redlock.Pool{pool})
	defer sdl.Close()

	_ = sdl.Set(ctx, "counted", map[string][]byte{"k": []byte("v")})
	stats, _ := sdl.Statistics(ctx)
	fmt.Println("keys:", stats[0].Keys, "answered:", stats[0].Error == "", "uses memory:", stats[0].UsedMemory > 0)
	_ = sdl.RemoveAll(ctx, "counted")
	// Output:
	// keys: 1 answered: true uses memory: true
}
