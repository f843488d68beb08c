// Package redlocktest starts real Redis nodes for tests and injects the
// faults Redlock has to survive: a node killed, restarted empty, paused,
// partitioned away, slowed down, or losing its replies.
//
// Start returns a Cluster of n independent nodes and removes them when the
// test ends:
//
//	c := redlocktest.Start(t, 5)
//	f, err := redlock.NewFactory(c.Pools())
//	...
//	c.Partition(0) // node 0 unreachable: packets dropped, connections hang
//	c.Kill(1)      // node 1 gone, its keys lost
//	c.Heal(0)
//	c.Restart(1)   // back, empty, at the same address
//
// # Backends
//
// The Docker backend (github.com/ory/dockertest/v3) runs each node in a
// container, all of a cluster's containers on a network of its own. The
// image is redis:7 unless WithImage or REDLOCKTEST_IMAGE says otherwise.
// When the image is neither present nor pullable (a machine with no
// registry), Start builds one FROM scratch out of the local redis-server
// binary, the libraries ldd lists and the dynamic loader, and reuses it
// afterwards (see BuildLocalImage). Kill sends SIGKILL to the container
// (dockertest's own stop signal is SIGWINCH, which Redis ignores); Restart
// starts the same container again and follows its new host port.
//
// The process backend runs local redis-server processes on free loopback
// ports, paused with SIGSTOP and killed with SIGKILL. A node counts as
// started only once the server answering on its port reports the process
// id of the child just launched, so another run's server on a reused port
// is never taken for it; a port lost between its pick and the bind is
// replaced by a new one, also at Restart.
//
// With BackendAuto (the default; REDLOCKTEST_BACKEND=docker or process
// forces one) Docker is used when an engine answers, else redis-server
// processes, else the test is skipped with a message that says what to
// install.
//
// # Faults
//
// Every node sits behind a fault-injecting TCP proxy, run inside the test
// process, on a fixed loopback address. Clients only ever see the proxy, so
// a node's address survives Restart, and Partition, Delay and CutReplies
// behave the same on both backends. Kill, Restart, Pause and Unpause act on
// the node itself; a killed node's proxy also stops listening until
// Restart, so clients get "connection refused" as from a dead host. Cluster.NewClient gives one client proxies of its own,
// for asymmetric faults: a lock holder cut off from the majority while its
// competitors still reach it.
//
// # Clocks
//
// WithClockShim starts nodes on a wall clock the test steps while they
// run: c.SetClockOffset(0, 10*time.Second) moves node 0's clock 10 s ahead
// at once, so that it answers TIME 10 s ahead and expires a key with less
// than 10 s to live, as after a step of the machine's clock. It is an
// LD_PRELOAD shim, built with gcc, that reads the offset from a
// memory-mapped file; the Docker backend bind-mounts both into the
// container, so it needs a local engine and a glibc image.
//
// Every fault method fails the test with a message naming the node and the
// backend when it cannot do its job, and must be called from the test's
// goroutine. Nothing outlives the test: containers, networks, processes,
// proxies and connection pools are removed at cleanup, and containers that a
// crashed test binary left behind are removed by the next Start on the same
// host.
package redlocktest
