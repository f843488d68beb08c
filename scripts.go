package redlock

import (
	"embed"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// The node scripts live in lua/, one file each, embedded at build time. Each
// compares the stored token with the caller's before touching a key, so a
// client can never release, extend or read another holder's lock. They run
// with EVALSHA and fall back to EVAL on NOSCRIPT; every pipelined connection
// loads them when it is dialled. All take their key count as first argument.
//
//go:embed lua/*.lua
var luaFiles embed.FS

// releaseChannelPrefix names the channel on which release.lua announces a
// released lock: the prefix followed by the lock name.
const releaseChannelPrefix = "redlock:released:"

// script is one Lua script: its source, and its SHA1 boxed once as a
// command argument.
type script struct {
	name    string
	src     string
	hashArg any
	pub     *Script // as handed to a Node
	bit     uint64  // 1 << the script's place in allScripts
}

var (
	releaseScript       = loadScript("release")
	releaseManyScript   = loadScript("release_many")
	extendScript        = loadScript("extend")
	extendManyScript    = loadScript("extend_many")
	checkScript         = loadScript("check")
	checkManyScript     = loadScript("check_many")
	inspectScript       = loadScript("inspect")
	acquireFencedScript = loadScript("acquire_fenced")
	fenceCommitScript   = loadScript("fence_commit")
	multiSetScript      = loadScript("multi_set")
	rwReadScript        = loadScript("rw_read")
	rwWriteScript       = loadScript("rw_write")
)

// allScripts lists every script, to load on a new connection.
var allScripts = []*script{releaseScript, releaseManyScript, extendScript, extendManyScript, checkScript, checkManyScript, inspectScript, acquireFencedScript, fenceCommitScript, multiSetScript, rwReadScript, rwWriteScript}

func init() {
	for i, s := range allScripts {
		s.bit = 1 << i
	}
}

// loadScript reads lua/name.lua.
func loadScript(name string) *script {
	src, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("redlock: missing embedded script " + name) // a build defect, not input
	}
	rs := redis.NewScript(-1, string(src))
	s := &script{name: name, src: string(src), hashArg: rs.Hash()}
	s.pub = &Script{name: name, src: string(src), hash: rs.Hash(), in: s}
	return s
}

// scriptSources lists the sources of every script, to load on a node.
func scriptSources() []string {
	out := make([]string, len(allScripts))
	for i, s := range allScripts {
		out[i] = s.src
	}
	return out
}

// isNoScript reports whether err is Redis's NOSCRIPT reply.
func isNoScript(err error) bool {
	re, ok := err.(redis.Error)
	return ok && strings.HasPrefix(string(re), "NOSCRIPT")
}
