//go:build unix

package redisproc

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

// identity is who answers on an address: the process id and run id a
// Redis server reports in INFO server.
type identity struct {
	pid   int
	runID string
}

// probe connects to addr and asks the server who it is. ready is false
// while it still refuses commands (PING fails while it loads its data).
func probe(addr string) (id identity, ready bool, err error) {
	c, err := redis.Dial("tcp", addr,
		redis.DialConnectTimeout(time.Second),
		redis.DialReadTimeout(time.Second),
		redis.DialWriteTimeout(time.Second))
	if err != nil {
		return identity{}, false, err
	}
	defer c.Close()
	info, err := redis.String(c.Do("INFO", "server"))
	if err != nil {
		return identity{}, false, err
	}
	if id, err = parseIdentity(info); err != nil {
		return identity{}, false, err
	}
	_, err = c.Do("PING")
	return id, err == nil, nil
}

// parseIdentity reads process_id and run_id from an INFO reply.
func parseIdentity(info string) (identity, error) {
	var id identity
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "process_id":
			id.pid, _ = strconv.Atoi(v)
		case "run_id":
			id.runID = v
		}
	}
	if id.pid <= 0 || id.runID == "" {
		return identity{}, fmt.Errorf("redisproc: INFO server names no process_id and run_id")
	}
	return id, nil
}
