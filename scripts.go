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
	// guarded is the script's form for a vote under the node guard, which
	// also returns the node's clock and LASTSAVE (guardedSource); nil for
	// scripts that are not votes.
	guarded *script
	writes  bool // it writes lock keys: WithReplicaAck waits for its replicas
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
	acquireScript       = loadScript("acquire")
)

// allScripts lists every script, to load on a new connection.
var allScripts = []*script{releaseScript, releaseManyScript, extendScript, extendManyScript, checkScript, checkManyScript, inspectScript, acquireFencedScript, fenceCommitScript, multiSetScript, rwReadScript, rwWriteScript, acquireScript}

// voteScripts are the scripts whose yes counts toward a quorum that makes
// or keeps a holding: under the node guard they run in their guarded form.
var voteScripts = []*script{acquireScript, acquireFencedScript, fenceCommitScript, multiSetScript, rwReadScript, rwWriteScript, extendScript, extendManyScript, checkScript}

// writeScripts are the scripts that write lock keys.
var writeScripts = []*script{acquireScript, acquireFencedScript, fenceCommitScript, multiSetScript, rwReadScript, rwWriteScript, extendScript, extendManyScript, releaseScript, releaseManyScript}

func init() {
	for _, s := range writeScripts {
		s.writes = true
	}
	for _, s := range voteScripts {
		s.guarded = newScript(s.name, guardedSource(s.src))
		s.guarded.writes = s.writes
		allScripts = append(allScripts, s.guarded)
	}
	for i, s := range allScripts {
		s.bit = 1 << i
	}
}

// guardedSource wraps a vote script so that its reply also carries what
// the node guard judges the vote by, read in the same execution: {the
// script's own reply, the node's TIME in microseconds, LASTSAVE}. A nil
// reply becomes false, which Redis sends as nil inside the array. A
// server whose scripts cannot call LASTSAVE (an embedded test server)
// sends -2: unknown.
func guardedSource(src string) string {
	return "local function vote()\n" + src + "\nend\n" +
		"local r = vote()\n" +
		"local t = redis.call(\"TIME\")\n" +
		"local saved = redis.pcall(\"LASTSAVE\")\n" +
		"if type(saved) ~= \"number\" then saved = -2 end\n" +
		"if r == nil then r = false end\n" +
		"return {r, tonumber(t[1]) * 1000000 + tonumber(t[2]), saved}\n"
}

// loadScript reads lua/name.lua.
func loadScript(name string) *script {
	src, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("redlock: missing embedded script " + name) // a build defect, not input
	}
	return newScript(name, string(src))
}

// newScript makes a script of src.
func newScript(name, src string) *script {
	rs := redis.NewScript(-1, src)
	s := &script{name: name, src: src, hashArg: rs.Hash()}
	s.pub = &Script{name: name, src: src, hash: rs.Hash(), in: s}
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
