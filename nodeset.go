package redlock

import (
	"context"
	"sync"
	"time"
)

// nodeSet is the node list of a factory (or lone lock), which must name
// distinct servers: two URLs for one server ("localhost" and "127.0.0.1",
// or databases /0 and /1) would let one machine hold the quorum. The check
// uses each server's run_id, learnt when a pipelined connection is set up
// and by an INFO round at the first operation, which waits for a quorum of
// answers and then briefly for the others, so that a hung node does not
// slow it down; nodes whose answer is not in yet are asked again in the
// background at later operations, at most once per probeInterval.
type nodeSet struct {
	g           *nodeGroup // for the probe's round
	list        []*node
	o           *owner
	quorum      int
	nodeTimeout time.Duration
	events      *observer // the factory's: nodes leaving and rejoining the vote

	mu        sync.Mutex
	err       error // two nodes are one server: every operation fails
	known     int   // nodes whose run_id is known
	probed    bool  // the first probe is done
	probing   bool
	firstDone chan struct{} // closed when the first probe is done
	lastProbe time.Time
}

// probeInterval bounds how often unidentified nodes are asked again.
const probeInterval = time.Second

// probeGrace is how long the first probe waits, beyond twice the time the
// quorum took, for the other nodes' answers.
const probeGrace = 10 * time.Millisecond

// distinct checks that no two identified nodes are the same server.
func (s *nodeSet) distinct() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]int, len(s.list))
	s.known = 0
	for _, n := range s.list {
		id := n.identity()
		if id == "" {
			continue
		}
		s.known++
		if j, dup := seen[id]; dup && s.err == nil {
			s.err = invalidArg("nodes %d (%s) and %d (%s) are the same Redis server (run_id %s): a quorum needs independent servers",
				j, s.list[j].address(), n.index, n.address(), id)
		}
		seen[id] = n.index
	}
	return s.err
}

// check returns the set's error, identifying its nodes first when needed:
// the first operations wait for the answers (one node timeout at most),
// since the node guard judges votes by them; later ones ask the nodes
// still unknown in the background.
func (s *nodeSet) check(ctx context.Context) error {
	s.mu.Lock()
	if s.firstDone == nil {
		s.firstDone = make(chan struct{})
	}
	if !s.probed && s.probing { // another operation runs the first probe
		done := s.firstDone
		s.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
		}
		s.mu.Lock()
	}
	err, first, todo := s.err, !s.probed, s.known < len(s.list) && !s.probing
	if todo && !first && time.Since(s.lastProbe) < probeInterval {
		todo = false
	}
	if todo {
		s.probing, s.lastProbe = true, time.Now()
	}
	s.mu.Unlock()
	switch {
	case err != nil || !todo:
		return err
	case first:
		return s.probe(ctx)
	}
	if !s.o.spawn(func() { s.probe(context.Background()) }) {
		s.mu.Lock()
		s.probing = false
		s.mu.Unlock()
	}
	return nil
}

// probe reads the facts of every node (factsCommands, a round each, sent
// at once): their run_ids, and for transports that are not pipelined what
// the node guard needs before the first vote.
func (s *nodeSet) probe(ctx context.Context) error {
	defer func() {
		s.mu.Lock()
		if !s.probed {
			close(s.firstDone)
		}
		s.probing, s.probed = false, true
		s.mu.Unlock()
	}()
	f := s.g.fan(s.quorum, s.nodeTimeout, nil)
	r := f.send(ctx, plainCmd(judgeAnyReply, "INFO"))
	conf := f.send(ctx, plainCmd(judgeAnyReply, factsCommands[1][0].(string), factsCommands[1][1:]...))
	defer r.free()
	defer conf.free()
	f.wait(ctx, &r, false)
	// A second name of one server answers about as fast as the first: wait
	// a little more for the rest, but not for a hung node.
	f.nodeTimeout = min(s.nodeTimeout, 2*r.elapsed()+probeGrace)
	f.wait(ctx, &r, true)
	f.wait(ctx, &conf, true) // sent with INFO: in by now, or as good as lost
	got := monotonic()
	r.each(func(n *node, rep *reply) {
		if rep.err != nil && !isErrorReply(rep.err) {
			return
		}
		var config any
		if conf.got&(1<<n.index) != 0 {
			config = replyValue(conf.slots[n.index])
		}
		facts := parseFacts(replyValue(*rep), config)
		n.guard.learnt(facts, got, false)
		n.identified(identityOf(facts, n.index))
	})
	return s.distinct()
}
