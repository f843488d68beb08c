package sdlstore

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockplus/redlock"
)

// probeTimeout bounds each instance or sentinel that Health or Statistics
// asks, so that one hung server does not use up the caller's whole
// deadline.
const probeTimeout = 3 * time.Second

// infoFields parses an INFO reply into its "field:value" pairs.
func infoFields(info string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// subFields parses "a=1,b=2", the value form of INFO's slaveN and dbN lines.
func subFields(v string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// intField returns a numeric field, 0 when absent or not a number.
func intField(m map[string]string, k string) int64 {
	n, _ := strconv.ParseInt(m[k], 10, 64)
	return n
}

// addr names an instance: its node's address, its pool's address when the
// pool knows it (redlock.Addresser), else the address NewFromEnv dialled,
// else "".
func (in *instance) addr() string {
	if in.node != nil {
		return in.node.Addr()
	}
	if a, ok := in.pool.(redlock.Addresser); ok {
		return a.Addr()
	}
	return in.name
}

// info runs INFO [section] on an instance within probeTimeout.
func (s *Store) info(ctx context.Context, in *instance, op string, section ...any) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	raw, err := redis.String(s.do(ctx, in, "", op, "INFO", section...))
	if err != nil {
		return nil, replyErr(op, err)
	}
	return infoFields(raw), nil
}
