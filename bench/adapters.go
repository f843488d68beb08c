package main

import (
	"errors"

	"github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/redlockplus/redlock"
	redlockgoredis "github.com/redlockplus/redlock/goredis"
	"github.com/redlockplus/redlock/internal/benchkit"
	redlockrueidis "github.com/redlockplus/redlock/rueidis"
)

// adapterTargets are this package's locks over go-redis and rueidis
// clients (the modules goredis and rueidis), to compare with the redigo
// path of the target "redlock".
func adapterTargets() []target {
	all := func(benchkit.Workload) bool { return true }
	return []target{
		{name: "ours-goredis", build: goredisTarget, runs: all},
		{name: "ours-rueidis", build: rueidisTarget, runs: all},
	}
}

// goredisTarget makes one go-redis client per node, with as many
// connections as the redigo pools of the other targets.
func goredisTarget(addrs []string, _ []*redis.Pool, _ benchkit.Workload) (benchkit.Target, error) {
	clients := make([]goredis.UniversalClient, len(addrs))
	closers := make([]func() error, len(addrs))
	for i, a := range addrs {
		c := goredis.NewClient(&goredis.Options{Addr: a, PoolSize: poolSize, ContextTimeoutEnabled: true})
		clients[i], closers[i] = c, c.Close
	}
	return withClients("ours-goredis", redlockgoredis.Nodes(clients...), closers)
}

// rueidisTarget makes one rueidis client per node, without client-side
// caching (the lock never reads a key twice).
func rueidisTarget(addrs []string, _ []*redis.Pool, _ benchkit.Workload) (benchkit.Target, error) {
	var clients []rueidis.Client
	var closers []func() error
	for _, a := range addrs {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{a}, ForceSingleClient: true, DisableCache: true})
		if err != nil {
			closeAll(closers)
			return nil, err
		}
		clients = append(clients, c)
		closers = append(closers, func() error { c.Close(); return nil })
	}
	return withClients("ours-rueidis", redlockrueidis.Nodes(clients...), closers)
}

// withClients is benchkit.OursNodes whose Close also closes the clients.
func withClients(name string, nodes []redlock.Node, closers []func() error) (benchkit.Target, error) {
	t, err := benchkit.OursNodes(name, nodes)
	if err != nil {
		closeAll(closers)
		return nil, err
	}
	return clientTarget{t, closers}, nil
}

// clientTarget is a target that owns its clients.
type clientTarget struct {
	benchkit.KeepTarget
	closers []func() error
}

func (t clientTarget) Close() error {
	err := t.KeepTarget.Close()
	return errors.Join(err, closeAll(t.closers))
}

func closeAll(closers []func() error) error {
	var errs []error
	for _, c := range closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}
