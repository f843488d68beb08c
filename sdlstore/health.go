package sdlstore

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// ModuleCommands are the commands of the DBaaS Redis module that ricsdl
// needs. This package does not use them (it runs Lua scripts instead);
// Health reports which ones an instance has, for information.
var ModuleCommands = []string{"SETIE", "DELIE", "MSETMPUB", "SETIEMPUB", "SETNXMPUB", "DELMPUB", "DELIEMPUB"}

// Health is the state of a Store's instances and of their sentinels.
type Health struct {
	// NodeCount is how many nodes each instance should have (NodeCount).
	NodeCount int `json:"node_count"`
	// Instances has one entry per instance, in hashing order.
	Instances []InstanceHealth `json:"instances"`
	// Sentinels has one entry per sentinel-managed instance.
	Sentinels []SentinelHealth `json:"sentinels"`
}

// Healthy reports whether every instance and every sentinel is healthy.
func (h Health) Healthy() bool {
	for _, in := range h.Instances {
		if !in.Healthy {
			return false
		}
	}
	for _, s := range h.Sentinels {
		if !s.Healthy {
			return false
		}
	}
	return true
}

// Reachable reports whether every instance and every sentinel answered.
func (h Health) Reachable() bool {
	for _, in := range h.Instances {
		if !in.Reachable {
			return false
		}
	}
	for _, s := range h.Sentinels {
		if !s.Reachable {
			return false
		}
	}
	return true
}

// InstanceHealth is what one instance says about itself.
type InstanceHealth struct {
	Instance int    `json:"instance"`
	Addr     string `json:"addr,omitempty"` // "" when the pool does not know it
	// Reachable: the instance answered; Error says why not.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// Role is the ROLE of the server: "master", "slave" or "sentinel".
	Role string `json:"role,omitempty"`
	// MasterLink is a replica's link to its master ("up" or "down"); empty
	// for a master.
	MasterLink string `json:"master_link,omitempty"`
	// Replicas are the replicas connected to a master.
	Replicas []ReplicaHealth `json:"replicas"`
	// ModuleCommands are the DBaaS module commands the server has
	// (informative only: this package does not need them).
	ModuleCommands []string `json:"dbaas_module_commands"`
	// Healthy: reachable, a master, and at least NodeCount-1 replicas
	// online; Problems says what is wrong otherwise.
	Healthy  bool     `json:"healthy"`
	Problems []string `json:"problems,omitempty"`
}

// ReplicaHealth is one replica as its master or a sentinel reports it.
type ReplicaHealth struct {
	Addr string `json:"addr"`
	// State is the master's view ("online", "wait_bgsave", ...) or the
	// sentinel's flags ("slave", "slave,s_down", ...).
	State string `json:"state"`
	// MasterLink is the sentinel's view of the replica's link ("ok",
	// "err"); empty in a master's report.
	MasterLink string `json:"master_link,omitempty"`
}

// SentinelHealth is what a sentinel says about the master of an instance.
type SentinelHealth struct {
	Instance   int    `json:"instance"`
	Addr       string `json:"addr"`
	MasterName string `json:"master_name"`
	// Reachable: the sentinel answered; Error says why not.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// MasterAddr and MasterFlags are the master as the sentinel sees it;
	// the flags are "master" when all is well.
	MasterAddr  string          `json:"master_addr,omitempty"`
	MasterFlags string          `json:"master_flags,omitempty"`
	Replicas    []ReplicaHealth `json:"replicas"`
	// OtherSentinels counts the other sentinels that watch the master.
	OtherSentinels int `json:"other_sentinels"`
	// Healthy: reachable, the master flagged "master" only, and at least
	// NodeCount-1 replicas with a working link and NodeCount-1 other
	// sentinels (one sentinel per node); Problems says what is wrong
	// otherwise.
	Healthy  bool     `json:"healthy"`
	Problems []string `json:"problems,omitempty"`
}

// Health asks every instance for its role, replication and DBaaS module
// commands, and every sentinel for its view of the master, each within a
// few seconds, as sdlcli's healthcheck does. An instance or sentinel that
// does not answer is reported, not returned as an error; the error is only
// ErrClosed.
func (s *Store) Health(ctx context.Context) (Health, error) {
	if err := s.usable(); err != nil {
		return Health{}, err
	}
	h := Health{NodeCount: s.cfg.nodeCount}
	for _, in := range s.insts {
		h.Instances = append(h.Instances, s.instanceHealth(ctx, in))
		if sp, ok := in.pool.(*sentinelPool); ok {
			h.Sentinels = append(h.Sentinels, s.sentinelHealth(ctx, in.index, sp))
		}
	}
	return h, nil
}

// instanceHealth checks one instance.
func (s *Store) instanceHealth(ctx context.Context, in *instance) InstanceHealth {
	ih := InstanceHealth{Instance: in.index, Replicas: []ReplicaHealth{}, ModuleCommands: []string{}}
	repl, err := s.info(ctx, in, "health", "replication")
	ih.Addr = in.addr() // a sentinel pool knows its master after the first command
	if err != nil {
		ih.Error = err.Error()
		ih.Problems = []string{"unreachable"}
		return ih
	}
	ih.Reachable = true
	ih.Role = repl["role"]
	ih.MasterLink = repl["master_link_status"]
	online := 0
	for i := int64(0); i < intField(repl, "connected_slaves"); i++ {
		f := subFields(repl[fmt.Sprintf("slave%d", i)])
		if f["state"] == "online" {
			online++
		}
		ih.Replicas = append(ih.Replicas, ReplicaHealth{Addr: net.JoinHostPort(f["ip"], f["port"]), State: f["state"]})
	}
	ih.ModuleCommands = s.moduleCommands(ctx, in)
	if ih.Role != "master" {
		ih.Problems = append(ih.Problems, fmt.Sprintf("role is %q, not master", ih.Role))
	}
	if want := s.cfg.nodeCount - 1; online < want {
		ih.Problems = append(ih.Problems, fmt.Sprintf("%d of %d replicas online", online, want))
	}
	ih.Healthy = len(ih.Problems) == 0
	return ih
}

// moduleCommands returns the DBaaS module commands the instance knows.
func (s *Store) moduleCommands(ctx context.Context, in *instance) []string {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	args := make([]any, 0, len(ModuleCommands)+1)
	args = append(args, "INFO")
	for _, c := range ModuleCommands {
		args = append(args, c)
	}
	vals, err := redis.Values(s.do(ctx, in, "", "health", "COMMAND", args...))
	out := []string{}
	if err != nil {
		return out
	}
	for i, v := range vals {
		if v != nil && i < len(ModuleCommands) {
			out = append(out, ModuleCommands[i])
		}
	}
	return out
}

// sentinelHealth asks the sentinel of an instance about its master.
func (s *Store) sentinelHealth(ctx context.Context, index int, sp *sentinelPool) SentinelHealth {
	sh := SentinelHealth{Instance: index, Addr: sp.sentinelAddr, MasterName: sp.master, Replicas: []ReplicaHealth{}}
	master, replicas, err := sp.describe(ctx)
	if err != nil {
		sh.Error = backendErr("sentinel health", err).Error()
		sh.Problems = []string{"unreachable"}
		return sh
	}
	sh.Reachable = true
	sh.MasterAddr = net.JoinHostPort(master["ip"], master["port"])
	sh.MasterFlags = master["flags"]
	sh.OtherSentinels = int(intField(master, "num-other-sentinels"))
	linked := 0
	for _, r := range replicas {
		rh := ReplicaHealth{Addr: net.JoinHostPort(r["ip"], r["port"]), State: r["flags"], MasterLink: r["master-link-status"]}
		if rh.State == "slave" && rh.MasterLink == "ok" {
			linked++
		}
		sh.Replicas = append(sh.Replicas, rh)
	}
	want := s.cfg.nodeCount - 1
	if sh.MasterFlags != "master" {
		sh.Problems = append(sh.Problems, fmt.Sprintf("master flags are %q", sh.MasterFlags))
	}
	if linked < want {
		sh.Problems = append(sh.Problems, fmt.Sprintf("%d of %d replicas linked", linked, want))
	}
	if sh.OtherSentinels < want {
		sh.Problems = append(sh.Problems, fmt.Sprintf("%d of %d other sentinels", sh.OtherSentinels, want))
	}
	sh.Healthy = len(sh.Problems) == 0
	return sh
}

// describe asks the sentinel for SENTINEL MASTER and SENTINEL REPLICAS of
// its master, within probeTimeout.
func (p *sentinelPool) describe(ctx context.Context) (map[string]string, []map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c, err := redis.DialContext(ctx, "tcp", p.sentinelAddr, redis.DialConnectTimeout(sentinelTimeout))
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	master, err := redis.StringMap(redis.DoContext(c, ctx, "SENTINEL", "MASTER", p.master))
	if err != nil {
		return nil, nil, err
	}
	vals, err := redis.Values(redis.DoContext(c, ctx, "SENTINEL", "REPLICAS", p.master))
	if err != nil {
		return nil, nil, err
	}
	replicas := make([]map[string]string, 0, len(vals))
	for _, v := range vals {
		m, err := redis.StringMap(v, nil)
		if err != nil {
			return nil, nil, err
		}
		replicas = append(replicas, m)
	}
	slices.SortFunc(replicas, func(a, b map[string]string) int { return strings.Compare(a["name"], b["name"]) })
	return master, replicas, nil
}
