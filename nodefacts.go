package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

// nodeFacts is what a node says of itself in INFO and CONFIG: what the
// node guard, the distinct-servers check and Factory.Health go by.
type nodeFacts struct {
	runID    string
	version  string
	uptime   time.Duration // uptime_in_seconds: see ranAtLeast
	clock    int64         // server_time_usec: the node's clock when it wrote the reply
	lastsave int64         // rdb_last_save_time: the node's LASTSAVE
	aof      bool          // aof_enabled, or CONFIG's appendonly
	// appendfsync is CONFIG GET appendfsync; "" when CONFIG is refused
	// (managed services rename or hide it), which counts as not durable.
	appendfsync string
	maxmemory   int64
	policy      string // maxmemory_policy
	infoErr     error  // INFO was refused: nothing above is known
}

// factsCommands are the commands that read a node's facts, in the order
// parseFacts takes their replies.
var factsCommands = [][]any{{"INFO"}, {"CONFIG", "GET", "append*"}}

// parseFacts reads the replies to factsCommands.
func parseFacts(info, config any) nodeFacts {
	var f nodeFacts
	if e, ok := info.(redis.Error); ok {
		f.infoErr = e
		return f
	}
	text, _ := redis.String(info, nil)
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "run_id":
			f.runID = v
		case "redis_version":
			f.version = v
		case "uptime_in_seconds":
			f.uptime = time.Duration(n) * time.Second
		case "server_time_usec":
			f.clock = n
		case "rdb_last_save_time":
			f.lastsave = n
		case "aof_enabled":
			f.aof = n == 1
		case "maxmemory":
			f.maxmemory = n
		case "maxmemory_policy":
			f.policy = v
		}
	}
	if f.runID == "" && f.uptime == 0 {
		f.infoErr = errors.New("INFO has no server section: not a Redis server, or one that hides it")
	}
	f.appendfsync = configValue(config, "appendfsync")
	f.aof = f.aof || configValue(config, "appendonly") == "yes"
	return f
}

// configValue reads one parameter of a CONFIG GET reply: an array of
// names and values, or, from a client speaking RESP3, a map.
func configValue(v any, name string) string {
	var val any
	switch v := v.(type) {
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			if k, _ := text(v[i]); k == name {
				val = v[i+1]
			}
		}
	case map[any]any:
		val = v[name]
	case map[string]any:
		val = v[name]
	}
	s, _ := text(val)
	return s
}

// text reads a bulk or simple string in any client's form.
func text(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case []byte:
		return string(v), true
	}
	return "", false
}

// ranAtLeast is how long, at least, the process had run when it wrote
// the reply. Redis gives uptime_in_seconds as the whole second of its
// clock now minus the whole second of its start (server.unixtime -
// server.stat_starttime), so it reads 1 a moment after a start late in a
// second: the start was before the second that ended uptime seconds
// before this one, that is more than uptime - 1 s plus the fraction of
// the current second (server_time_usec, read with it) ago.
func (f nodeFacts) ranAtLeast() time.Duration {
	frac := time.Duration(0)
	if f.clock > 0 {
		frac = time.Duration(f.clock%1e6) * time.Microsecond
	}
	return f.uptime - time.Second + frac
}

// durable reports whether the node keeps every acknowledged write across
// a restart: AOF on, fsynced before each reply.
func (f nodeFacts) durable() bool { return f.aof && f.appendfsync == "always" }

// persistence describes the node's persistence for messages.
func (f nodeFacts) persistence() string {
	switch {
	case !f.aof:
		return "appendonly no"
	case f.appendfsync == "":
		return "appendonly yes, appendfsync unknown: CONFIG refused"
	}
	return "appendonly yes, appendfsync " + f.appendfsync
}

// evicting reports whether the node may evict keys with a TTL, which lock
// keys always have: a memory limit with any policy but noeviction.
func (f nodeFacts) evicting() bool {
	return f.maxmemory > 0 && f.policy != "" && f.policy != "noeviction"
}

// risk names a setting of the node that can break a lock's safety, or "".
func (f nodeFacts) risk() string {
	if f.evicting() {
		return fmt.Sprintf("maxmemory-policy %s with maxmemory %d: the node may evict lock keys before their TTL (set maxmemory-policy noeviction)", f.policy, f.maxmemory)
	}
	return ""
}

// readFacts asks the node for its facts, each command within timeout, and
// hands them to the guard and the distinct-servers check, whose verdict on
// a duplicate every operation then meets (nodeSet.check). It fails only
// when INFO got no reply.
func (n *node) readFacts(timeout time.Duration) (nodeFacts, error) {
	ctx := context.Background()
	info := n.do(ctx, plainCmd(judgeAnyReply, "INFO"), timeout)
	got := monotonic()
	if info.err != nil && !isErrorReply(info.err) {
		return nodeFacts{}, info.err
	}
	config := n.do(ctx, plainCmd(judgeAnyReply, factsCommands[1][0].(string), factsCommands[1][1:]...), timeout)
	f := parseFacts(replyValue(info), replyValue(config))
	n.guard.learnt(f, got, false)
	n.identified(identityOf(f, n.index))
	return f, nil
}

// replyValue is a reply's value, or the server's error reply as a value.
func replyValue(rep reply) any {
	var re redis.Error
	if errors.As(rep.err, &re) {
		return re
	}
	return rep.raw
}

// isErrorReply reports whether err carries an error reply of the server.
func isErrorReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}
