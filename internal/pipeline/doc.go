// Package pipeline multiplexes the commands of many concurrent callers on
// one Redis connection: an auto-pipelined, asynchronous connection.
//
// Callers hand in a Call and return at once; nobody waits for a reply here.
// Commands are written in the order they were sent, in batches: the first
// caller to find nobody writing becomes the writer and flushes its command
// together with whatever other callers queued meanwhile (flat combining),
// so there is no hop through a writer goroutine. One reader goroutine per
// connection matches the replies in order and hands each to its Call. When
// there is no usable connection, a goroutine dials one, so that a caller
// never blocks on a dial. A connection dialled on a plain socket of its own
// (SocketDialer, Socketed) gets each batch encoded here and written in one
// system call, and its replies parsed here off the socket; any other is
// written through redigo's Send and Flush and read with its Receive. A
// reply overdue by the stall time (a hung node)
// drops the connection and fails the calls in flight; the next call dials
// again.
//
// The package starts no goroutine on its own: every one goes through the
// Spawn function of its Config, so that the owner of the connection decides
// when background work is refused and waits for it.
package pipeline
