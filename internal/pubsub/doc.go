// Package pubsub keeps one Redis pub/sub connection to one node subscribed to
// a set of channels, for as long as its owner wants it: the release
// wake-ups of the lock factory and the notifications of sdlstore both sit on
// it.
//
// # Connections
//
// The connection comes from Config.Dial, a redigo connection, or from
// Config.Open, a Conn: a pub/sub connection of another client (go-redis,
// rueidis), which package redlock gets from a redlock.PubSubNode. Both run
// the same Subscriber; one internal seam (wire) writes the commands and
// reads the replies of either, and a redigo connection sends each batch of
// commands in one flush.
//
// # What a Subscriber does
//
// A Subscriber holds the set of channels its owner asked for. Subscribe and
// Unsubscribe only change that set and return at once: they never write to
// the network, so they may be called while the caller holds its own locks,
// and from the Subscriber's callbacks. A single writer goroutine brings the
// connection in line with the set, sending for each changed channel the one
// command that makes the server agree with the set's current state. Because
// one goroutine writes, in the order the set changed, a SUBSCRIBE can never
// be overtaken by an UNSUBSCRIBE of the same channel issued before it.
//
// Redis confirms every SUBSCRIBE. A channel counts as confirmed once the
// reply to the last command written for it says it is subscribed;
// WaitConfirmed waits for that, and Config.OnConfirm reports it per channel,
// on the first connection and again after every reconnection.
//
// # Health and reconnection
//
// Nothing is dialled before the first Subscribe. From then on the
// connection is PINGed every Config.HealthInterval; a connection that has
// answered nothing for two intervals (a paused or partitioned server) is
// dropped, like one whose socket failed. The Subscriber then dials again at
// once, and after each failed attempt pauses for a backoff that doubles from
// Config.MinBackoff to Config.MaxBackoff. A connection that never answered
// counts as a failed attempt. On every new connection it subscribes the
// whole set again and calls Config.OnConnect once the server confirmed it,
// with reconnect true after the first time: Redis pub/sub delivers at most
// once, so messages published while disconnected are lost, and an owner
// that must not miss a change re-reads its state there.
//
// # Callbacks
//
// OnMessage, OnKeys, OnConfirm and OnConnect run in the connection's reader
// goroutine, one at a time, in the order of the server's replies;
// OnDisconnect runs in the Subscriber's own goroutine. They must return
// quickly and must not wait for anything the reader provides: while one
// runs no reply is read, so the health check fails and every channel of the
// node stalls. Queue work elsewhere if it may take time (sdlstore queues
// events for its listener). Callbacks may call Subscribe and Unsubscribe,
// never WaitConfirmed or Close. The Subscriber holds none of its locks while
// it calls them, so a callback may take a lock under which its owner calls
// Subscribe and Unsubscribe.
//
// # Goroutines
//
// A Subscriber runs one long-lived goroutine, started by New through
// Config.Spawn (or the go statement when Spawn is nil), plus a reader and a
// writer per connection, which that goroutine starts and always joins before
// it returns. Close stops it and waits for it. An owner that wants to
// account for every goroutine passes its own Spawn: one that refuses once
// the owner's shutdown began makes New fail with ErrClosed, and the owner's
// shutdown must call Close on every Subscriber it created (Close waits, so
// it must not be called with a lock a callback takes).
package pubsub
