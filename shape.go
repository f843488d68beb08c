package redlock

import "strconv"

// lockShape is what the locks of one resolved configuration share: the
// options, the quorum call over the factory's nodes, and the command
// arguments derived from them, boxed once. A factory keeps one per
// distinct configuration of its valid, unobserved locks, so that a lock
// costs a pointer here instead of a copy of all of it: the locks made
// with the factory's defaults share one, and so do the locks made with
// options that resolve to the same values. The shape never changes after
// it is made.
type lockShape struct {
	cfg            config
	fan            fanout
	ttlArg         any       // the TTL in ms, in decimal: formatted once, not at every write
	fenceWindowArg any       // w of the fenced acquire, in µs; nil when not fenced (fence.go)
	vote           *voteRule // the node guard's rule for its votes; nil: off (guard.go)
}

// maxShapes bounds how many configurations a factory keeps shapes for;
// the locks of further configurations get shapes of their own, as do
// observed locks (their quorum calls carry the lock's observer) and
// locks with invalid options.
const maxShapes = 64

// The values of config.autoextend once resolved, so that two configs
// with the same setting compare equal.
var autoextendOff, autoextendOn = false, true

// shapeOf returns the shape of a lock with the resolved options cfg and
// observer obs: a shared one when shared is true and obs is nil.
func (f *Factory) shapeOf(cfg config, obs *observer, shared bool) *lockShape {
	if !shared || obs != nil {
		return f.newShape(cfg, obs)
	}
	f.shapesMu.Lock()
	defer f.shapesMu.Unlock()
	if s, ok := f.shapes[cfg]; ok {
		return s
	}
	s := f.newShape(cfg, nil)
	if len(f.shapes) < maxShapes {
		if f.shapes == nil {
			f.shapes = map[config]*lockShape{}
		}
		f.shapes[cfg] = s
	}
	return s
}

func (f *Factory) newShape(cfg config, obs *observer) *lockShape {
	s := &lockShape{cfg: cfg, ttlArg: strconv.FormatInt(cfg.ttlMs(), 10)}
	s.fan = f.fan(cfg.quorum, cfg.nodeTimeout, obs)
	s.vote = newVoteRule(&cfg, s.fan.fifo)
	if cfg.fencing {
		s.fenceWindowArg = fenceWindow(cfg.ttl)
	}
	return s
}
