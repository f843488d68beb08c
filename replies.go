package redlock

import (
	"fmt"
	"slices"

	"github.com/gomodule/redigo/redis"
)

// The reply readers of the node commands: each turns one node's reply into
// the reply a round tallies.

// reply is one node's answer in a quorum round.
type reply struct {
	err   error // a *NodeError when the node did not answer
	raw   any   // the reply itself, for commands that need more than value
	value int64 // the integer reply of the node script (the PTTL for a check)
	ok    bool  // the node did what was asked: set, extended, released, holds the key
	// reloaded: the node had lost the script, which was sent again with
	// EVAL; observers count it as a node fault.
	reloaded bool
	// committed: a fenced acquire's node committed the proposed token
	// (fence.go).
	committed bool
}

// judgeSet accepts the reply of SET NX: OK when set, nil when taken.
func judgeSet(v any) reply { return reply{ok: v != nil} }

// judgeOne accepts a script's 1 as yes.
func judgeOne(v any) reply {
	n, err := redis.Int64(v, nil)
	return reply{ok: n == 1, value: n, err: err}
}

// judgePTTL accepts a positive remaining time.
func judgePTTL(v any) reply {
	n, err := redis.Int64(v, nil)
	return reply{ok: n > 0, value: n, err: err}
}

// judgeList accepts a reply of n integers.
func judgeList(n int) func(v any) reply {
	return func(v any) reply {
		vals, err := redis.Int64s(v, nil)
		if err == nil && len(vals) != n {
			err = redis.Error("unexpected batch reply length")
		}
		return reply{ok: err == nil, raw: vals, err: err}
	}
}

// judgeFlags accepts a reply of n flags, one character per name, '1' for
// done and '0' for not, as extend_many.lua answers: a batch's reply is
// one bulk string, which both sides build and read at a fraction of the
// cost of an array of n integers. raw holds the flags.
func judgeFlags(n int) func(v any) reply {
	return func(v any) reply {
		flags, err := redis.Bytes(v, nil)
		if err == nil && len(flags) != n {
			err = redis.Error("unexpected batch reply length")
		}
		return reply{ok: err == nil, raw: flags, err: err}
	}
}

// flagged reports whether flag i of a judgeFlags reply says done.
func flagged(rep *reply, i int) bool { return rep.raw.([]byte)[i] == '1' }

// judgeAllFlags accepts a reply of n flags and counts the node as yes iff
// every one says done: the node did it for every name.
func judgeAllFlags(n int) func(v any) reply {
	flags := judgeFlags(n)
	return func(v any) reply {
		rep := flags(v)
		if rep.err == nil {
			rep.ok = !slices.ContainsFunc(rep.raw.([]byte), func(f byte) bool { return f != '1' })
		}
		return rep
	}
}

// judgeAny accepts any integer reply.
func judgeAny(v any) reply {
	n, ok := v.(int64)
	return reply{ok: ok, value: n}
}

// judgeAnyReply keeps the reply as it is; an error reply is kept too, as a
// value, since the caller decides what it means.
func judgeAnyReply(v any) reply { return reply{ok: true, raw: v} }

// judgeOK accepts a simple OK reply.
func judgeOK(v any) reply {
	s, err := redis.String(v, nil)
	if err == nil && s != "OK" {
		err = fmt.Errorf("unexpected reply %q", s)
	}
	return reply{ok: err == nil, err: err}
}

// judgeFence reads the fenced acquire's reply: nil when the key is taken,
// else {1, g} when the node committed the proposed token g, or {0, f} with
// the node's fence value f.
func judgeFence(v any) reply {
	if v == nil {
		return reply{}
	}
	vals, _ := v.([]any)
	if len(vals) != 2 {
		return reply{err: fmt.Errorf("fenced acquire replied %v, want two integers", v)}
	}
	flag, err := redis.Int64(vals[0], nil)
	if err != nil {
		return reply{err: err}
	}
	f, err := redis.Int64(vals[1], nil)
	if err != nil {
		return reply{err: err}
	}
	return reply{ok: true, value: f, committed: flag == 1}
}

// judgeValues accepts the three-element reply of inspectScript.
func judgeValues(v any) reply {
	vals, err := redis.Values(v, nil)
	if err == nil && len(vals) != 3 {
		err = fmt.Errorf("unexpected reply %v", vals)
	}
	return reply{ok: err == nil, raw: v, err: err}
}
