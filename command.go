package redlock

import (
	"slices"
	"sync"
	"time"
)

// command is what a round sends to every node, with the reading of its
// reply. Scripts are built by script.cmd and plain commands by plainCmd,
// so that the argument layout lives in one place.
type command struct {
	script *script // a lock script (EVALSHA, then EVAL on NOSCRIPT), or
	name   string  // a plain command
	// args is what the pipelined transport writes: for a script its hash,
	// the key count, the keys and the arguments; nkeys says how many keys.
	args  []any
	nkeys int
	judge func(v any) reply
	// contest marks an acquire attempt's command, on which a refusal means
	// another client holds a key: the round then waits for the nodes that
	// have not answered only briefly (fanout.wait).
	contest bool
	// deleteTTL, when positive, marks a delete that must happen: the script
	// deletes KEYS[i] when it holds ARGV[i], and a node that fails it hands
	// those deletes to its cleaner, for the keys' TTL at most.
	deleteTTL time.Duration
	// vote, when set, marks a command whose yes makes or keeps a holding,
	// judged by the node guard under this rule (guard.go).
	vote *voteRule
	// unacked marks a write that WithReplicaAck need not wait for: the
	// cleaner's deletes.
	unacked bool
	// enc, when set, holds the command in RESP, encoded by the first
	// connection that writes it to its socket and copied by the others
	// (call.Wire): a batch of a thousand extensions is the same bytes for
	// every node.
	enc *encoding
}

// encoding is a command's RESP, made once.
type encoding struct {
	once sync.Once
	buf  []byte
}

// encodeOnce makes cmd's connections share one encoding of it, appended
// to buf.
func (cmd *command) encodeOnce(buf []byte) *command {
	cmd.enc = &encoding{buf: buf[:0]}
	return cmd
}

// cmd builds a command of script s over keys with args.
func (s *script) cmd(judge func(v any) reply, keys []any, args ...any) *command {
	all := make([]any, 0, 2+len(keys)+len(args))
	all = append(append(append(all, s.hashArg, len(keys)), keys...), args...)
	return &command{script: s, args: all, nkeys: len(keys), judge: judge}
}

// extendManyCmd builds extend_many over n keys, in buf's array when it
// is large enough: key(i) returns key i with its token and TTL. The
// tokens follow the keys, then the TTLs as runs (extend_many.lua), so that
// a batch of one TTL carries it once: a batch of a thousand extensions is
// about 11 B a lock lighter for the writer, the socket and the node.
func extendManyCmd(buf []any, judge func(v any) reply, n int, key func(i int) (name, token, ttl any)) *command {
	all := slices.Grow(buf[:0], 2+2*n+2)[:2+2*n]
	all[0], all[1] = extendManyScript.hashArg, n
	var ttl any
	run := 0
	for i := range n {
		name, token, t := key(i)
		all[2+i], all[2+n+i] = name, token
		if run > 0 && t != ttl {
			all = append(all, run, ttl)
			run = 0
		}
		ttl = t
		run++
	}
	if run > 0 {
		all = append(all, run, ttl)
	}
	return &command{script: extendManyScript, args: all, nkeys: n, judge: judge}
}

// plainCmd builds a plain command.
func plainCmd(judge func(v any) reply, name string, args ...any) *command {
	return &command{name: name, args: args, judge: judge}
}

// attempt marks cmd as an acquire attempt's: contested once a node
// refuses it (see command.contest).
func (cmd *command) attempt() *command {
	cmd.contest = true
	return cmd
}

// mustDelete marks cmd, a delete script of keys that live ttl at most, as
// a delete that must happen; see command.deleteTTL.
func (cmd *command) mustDelete(ttl time.Duration) *command {
	cmd.deleteTTL = ttl
	return cmd
}

// discards are the deletes of a delete command, for a cleaner.
func (cmd *command) discards() []discard {
	keys, tokens := cmd.scriptKeys(nil)
	until := time.Now().Add(cmd.deleteTTL) // later than the keys can live: safe
	out := make([]discard, len(keys))
	for i, k := range keys {
		token, _ := tokens[i].(string)
		out[i] = discard{key: k, token: token, until: until}
	}
	return out
}

// scriptKeys returns the keys of a script command, appended to dst, and
// its arguments after them.
func (cmd *command) scriptKeys(dst []string) ([]string, []any) {
	for _, k := range cmd.args[2 : 2+cmd.nkeys] {
		dst = append(dst, k.(string)) // keys are strings by construction
	}
	return dst, cmd.args[2+cmd.nkeys:]
}
