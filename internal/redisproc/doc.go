// Package redisproc is the one way this repository's tests start a real
// redis-server process: internal/testkit/redistest (the module's own tests) and
// redlocktest's process backend both use it.
//
// A node never gets a fixed port. Start picks a port no other node of this
// test binary was given, and that no other test process on the machine
// holds: each process reserves its ports with a lock on a file in
// $TMPDIR/redisproc-ports, which the kernel drops when the process ends,
// so that a killed node's port is not handed to another package's tests
// while its replica, sentinel or clients still dial it. Start returns
// only once the server answering on it
// reports the process id of the child it launched (INFO server), so a
// ready check can never mistake another run's server for ours. When the
// port is taken between the pick and redis-server's bind, by anyone, the
// child exits or someone else answers; Start then kills its child and tries
// again on a new port.
//
// The package needs Unix signals (it pauses nodes with SIGSTOP); on other
// systems it is empty.
package redisproc
