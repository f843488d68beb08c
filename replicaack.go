package redlock

import (
	"fmt"
	"time"
)

// maxReplicaAck bounds WithReplicaAck: more replicas than that per node is
// a mistake, not a deployment.
const maxReplicaAck = 16

// WithReplicaAck makes a node's write count only once n of its replicas
// have it: every command that writes a lock key (an attempt, an
// extension, a fence commit, a release) is followed by WAIT n on the same
// connection, in the same pipeline, and a node that reports fewer than n
// acknowledgements within a quarter of the node timeout fails that command with a
// *ReplicaAckError (ErrReplicaAck). A lock acquired so survives the
// failover of any node to one of those replicas: the promoted replica
// holds its key. It is for nodes with replicas, the masters of a Redis
// Cluster (ClusterNodes) or sentinel-managed primaries; a node without
// enough replicas never votes. 0, the default, waits for none. It needs
// nodes whose commands share one connection with their WAIT: redigo pools
// (NewFactory, PoolNode) and the nodes of ClusterNodes; over other Nodes it
// is an ErrInvalidArgument. Like WithPipelining, it is factory-level. See
// docs/SAFETY.md, "Replica acknowledgement".
func WithReplicaAck(n int) Option {
	return func(c *config) { c.replicaAck = n; c.factoryOnlyGiven("WithReplicaAck") }
}

// ErrReplicaAck: a node's write was not acknowledged by the replicas that
// WithReplicaAck asks for, so the node's vote or release failed. It comes
// as a *ReplicaAckError in a *NodeError, and the other nodes decide the
// round.
var ErrReplicaAck = newSentinel("redlock: write not acknowledged by replicas")

// ReplicaAckError is a node's WAIT that reported fewer replicas than
// WithReplicaAck asks for.
type ReplicaAckError struct {
	Want, Got int
	Timeout   time.Duration // how long WAIT waited
}

func (e *ReplicaAckError) Error() string {
	return fmt.Sprintf("%d of the %d replicas that WithReplicaAck asks for acknowledged the write within %v (WAIT)", e.Got, e.Want, e.Timeout)
}

// Is makes the error match ErrReplicaAck and ErrRedlock.
func (e *ReplicaAckError) Is(target error) bool {
	return target == ErrReplicaAck || target == ErrRedlock
}

// ackWait is the WAIT arguments of a node under WithReplicaAck n with
// node timeout t: WAIT answers within a quarter of it, so that its reply
// comes before the round stops waiting even behind the WAIT of the batch
// before (a WAIT holds its connection until it answers; the pipeline keeps
// one unanswered at a time, conn.waitGate).
func ackWait(n int, t time.Duration) []any {
	if n <= 0 {
		return nil
	}
	return []any{n, max(t/4, time.Millisecond).Milliseconds()}
}

// checkAck reads the reply to a write's WAIT with the arguments wait.
func checkAck(v any, wait []any) error {
	got, ok := v.(int64)
	if !ok {
		return fmt.Errorf("WAIT after the write replied %v", v)
	}
	if want := wait[0].(int); int(got) < want {
		return &ReplicaAckError{Want: want, Got: int(got), Timeout: time.Duration(wait[1].(int64)) * time.Millisecond}
	}
	return nil
}

// writes reports whether cmd writes a lock key, so that WithReplicaAck
// waits for its replicas.
func (cmd *command) writes() bool {
	if cmd.unacked {
		return false
	}
	if cmd.script != nil {
		return cmd.script.writes
	}
	return cmd.name == "SET"
}

// checkAckNodes refuses WithReplicaAck over nodes that cannot send WAIT on
// the write's own connection.
func checkAckNodes(nodes []Node, ack int) error {
	if ack == 0 {
		return nil
	}
	for i, nd := range nodes {
		_, pooled := clusterPoolOf(nd)
		if _, ok := nd.(poolNode); !ok && !pooled {
			return invalidArg("WithReplicaAck needs nodes that send WAIT on the write's own connection (redigo pools, the nodes of redlock.ClusterNodes); node %d (%s) is not one", i, nd.Addr())
		}
	}
	return nil
}
