// Package redlockrueidis runs the locks of package redlock over rueidis
// clients the caller already has:
//
//	nodes := redlockrueidis.Nodes(client1, client2, client3)
//	f, err := redlock.NewFactoryFromNodes(nodes)
//	defer f.Close()
//
// Every command goes through the client's Do, and scripts through its Lua
// helper (EVALSHA, then EVAL on NOSCRIPT), so the client's automatic
// pipelining batches the commands of concurrent lock operations on its
// connection, and its TLS settings and hooks apply; the factory never
// closes the clients. Each client must reach one independent Redis server;
// the factory refuses two clients of the same server. Blocked Acquire calls
// poll (the release notifications of package redlock use redigo
// subscribers).
//
// valkey-go is a fork of rueidis with types of its own (valkey.Client is not
// a rueidis.Client), so it does not go through this module; Valkey servers
// do, reached with a rueidis client.
//
// This is a module of its own (github.com/redlockplus/redlock/rueidis), so
// that rueidis stays out of the dependencies of package redlock.
package redlockrueidis
