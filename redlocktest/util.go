package redlocktest

import (
	"fmt"
	"os/exec"
	"time"

	"github.com/gomodule/redigo/redis"
)

// lookRedisServer returns the path of the redis-server binary.
func lookRedisServer(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("no %s binary found (install it with: apt-get install redis-server, or set %s): %w", name, EnvRedisServer, err)
	}
	return p, nil
}

// ping dials addr and sends one PING.
func ping(addr string) error {
	c, err := redis.Dial("tcp", addr,
		redis.DialConnectTimeout(time.Second),
		redis.DialReadTimeout(time.Second),
		redis.DialWriteTimeout(time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Do("PING")
	return err
}
