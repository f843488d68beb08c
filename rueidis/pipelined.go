package redlockrueidis

import (
	"context"
	"time"
)

// pipelined is a command's context as the node hands it to rueidis: it
// ends when ctx does, with ctx's error and values, but it has no
// deadline. rueidis then queues the command on its pipelined connection,
// and a command whose context ends is abandoned there: the connection
// stays up, and the reply is discarded when it comes. Given a deadline, a
// command alone on a connection is written and read under that deadline
// instead, and rueidis closes the connection when it passes, so that the
// node's next command dials and handshakes first: one round trip more, and
// a node whose round trip is above half the node timeout never answers in
// time again once one of its commands timed out. A connection whose
// replies stopped is still replaced, by rueidis's PINGs
// (ConnWriteTimeout).
type pipelined struct{ context.Context }

// Deadline reports none; Done still ends at ctx's deadline.
func (pipelined) Deadline() (time.Time, bool) { return time.Time{}, false }
