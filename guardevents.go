package redlock

// NodeVoteEvent says that the node guard took a node out of the vote or
// let it vote again.
type NodeVoteEvent struct {
	Node   int // index in the node list
	Addr   string
	Voting bool
	Why    string // why it does not vote; "" when Voting
}

// NodeRiskEvent names a setting of a node that can break a lock's
// safety, reported once per node when the node guard first reads it.
type NodeRiskEvent struct {
	Node int
	Addr string
	Risk string // what the setting is and what to do, such as "maxmemory-policy volatile-lru ..."
}

// vote reports node n leaving the vote (why) or rejoining it.
func (ob *observer) vote(n *node, voting bool, why error) {
	if ob == nil {
		return
	}
	e := NodeVoteEvent{Node: n.index, Addr: n.address(), Voting: voting}
	if why != nil {
		e.Why = why.Error()
	}
	if ob.NodeVote != nil {
		ob.NodeVote(e)
	}
	if ob.log == nil {
		return
	}
	if voting {
		ob.log.Info("redlock: node votes again", "node", n.address())
	} else {
		ob.log.Warn("redlock: node out of the vote", "node", n.address(), "why", e.Why)
	}
}

// risk reports a risky setting of node n.
func (ob *observer) risk(n *node, risk string) {
	if ob == nil {
		return
	}
	if ob.NodeRisk != nil {
		ob.NodeRisk(NodeRiskEvent{Node: n.index, Addr: n.address(), Risk: risk})
	}
	if ob.log != nil {
		ob.log.Warn("redlock: node setting can break the lock's safety", "node", n.address(), "risk", risk)
	}
}
