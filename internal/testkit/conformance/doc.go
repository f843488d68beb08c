// Package conformance is one test suite for every client that carries the
// locks of package redlock: the redigo pools of the root module and the
// go-redis and rueidis nodes of the modules goredis and rueidis. Each
// module's tests call Run with a Client that makes its nodes over real
// redis-server processes (internal/redistest), and Interop with two
// clients, so that every client is held to the same behaviour: mutual
// exclusion (between goroutines, and between processes, also of different
// clients), every quorum mask, early return past a hung node, loss
// detection, RLock, Do, cancellation, NOSCRIPT recovery, Close with Acquire
// calls in flight, and the wake-up of a blocked Acquire by a release over
// the client's own pub/sub connections, which Close closes and which are
// opened again after the server killed them.
package conformance
