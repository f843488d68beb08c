package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

// redisNode is one redis-server process on a loopback port, without
// persistence, started and stopped by the tool.
type redisNode struct {
	addr   string
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// startNodes starts n redis-server processes on free loopback ports. On
// error the nodes already started are stopped.
func startNodes(ctx context.Context, bin string, n int) ([]*redisNode, error) {
	var nodes []*redisNode
	for range n {
		nd, err := startNode(ctx, bin)
		if err != nil {
			stopNodes(nodes)
			return nil, err
		}
		nodes = append(nodes, nd)
	}
	return nodes, nil
}

func startNode(ctx context.Context, bin string) (*redisNode, error) {
	return startNodeWith(ctx, bin, freePort)
}

// startNodeWith starts a node as startNode does, on a port that pick
// returns, with extra arguments after the tool's own (the nodes of the
// targets that start servers of their own, cluster.go).
func startNodeWith(ctx context.Context, bin string, pick func() (int, error), extra ...string) (*redisNode, error) {
	port, err := pick()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redlock-bench-")
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir,
		"--daemonize", "no", "--loglevel", "warning", "--maxclients", "10000"}, extra...)
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: start %s: %w (install it with: apt-get install -y redis-server)", bin, err)
	}
	nd := &redisNode{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(nd.exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := redis.DialContext(ctx, "tcp", nd.addr, redis.DialConnectTimeout(time.Second))
		if err == nil {
			_, err = c.Do("PING")
			c.Close()
			if err == nil {
				return nd, nil
			}
		}
		select {
		case <-nd.exited:
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("bench: redis-server on port %d exited: %s", port, strings.TrimSpace(out.String()))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			nd.stop()
			return nil, errors.Join(errors.New("bench: redis-server did not answer PING"), ctx.Err())
		}
	}
}

// stop asks the node to shut down without saving, kills it if it does not
// exit within 5 s, and removes its directory.
func (n *redisNode) stop() {
	if c, err := redis.Dial("tcp", n.addr, redis.DialConnectTimeout(time.Second)); err == nil {
		_, _ = c.Do("SHUTDOWN", "NOSAVE") // the connection closes: an error is expected
		c.Close()
	}
	select {
	case <-n.exited:
	case <-time.After(5 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.exited
	}
	_ = os.RemoveAll(n.dir)
}

func stopNodes(nodes []*redisNode) {
	for _, n := range nodes {
		n.stop()
	}
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// redisVersion returns the first line of `redis-server --version`.
func redisVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
