package sdlstore

import (
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockplus/redlock"
)

// The environment variables NewFromEnv reads, shared with ricsdl, sdlgo and
// the C++ SDL.
const (
	// EnvServiceHost is the Redis (or sentinel) host when no cluster list
	// is set.
	EnvServiceHost = "DBAAS_SERVICE_HOST"
	// EnvServicePort is a comma list of Redis ports, one per instance.
	EnvServicePort = "DBAAS_SERVICE_PORT"
	// EnvSentinelPort is a comma list of sentinel ports; set, it selects
	// sentinel mode.
	EnvSentinelPort = "DBAAS_SERVICE_SENTINEL_PORT"
	// EnvMasterName is a comma list of sentinel master names.
	EnvMasterName = "DBAAS_MASTER_NAME"
	// EnvClusterAddrList is a comma list of instance hosts, in hashing order.
	EnvClusterAddrList = "DBAAS_CLUSTER_ADDR_LIST"
	// EnvNodeCount is the number of Redis nodes of each instance: 1 for a
	// standalone server, 3 for a master with two replicas (and a sentinel
	// on each node). Health checks expect that many.
	EnvNodeCount = "DBAAS_NODE_COUNT"
)

// instanceConfig is one instance as the environment describes it.
type instanceConfig struct {
	Addr         string // host:port of Redis (standalone mode)
	SentinelAddr string // host:port of the sentinel (sentinel mode)
	MasterName   string // sentinel master name
}

// NewFromEnv returns a Store configured like ricsdl and sdlgo from the
// DBAAS_* variables:
//
//   - Instances: one per host of DBAAS_CLUSTER_ADDR_LIST, in order, or the
//     single DBAAS_SERVICE_HOST when the list is unset.
//   - DBAAS_SERVICE_PORT, DBAAS_SERVICE_SENTINEL_PORT and DBAAS_MASTER_NAME
//     are comma lists giving instance i its i-th entry; a list shorter than
//     the instance count is padded by repeating its last entry, and extra
//     entries are ignored. The port defaults to 6379.
//   - A non-empty DBAAS_SERVICE_SENTINEL_PORT selects sentinel mode: each
//     host is a sentinel, asked for its master (DBAAS_MASTER_NAME, required)
//     with SENTINEL get-master-addr-by-name; the master is confirmed with
//     ROLE on every new connection and looked up again whenever a connection
//     breaks or Redis answers READONLY, so the Store follows failovers.
//   - The sentinel port list must give every instance a port or none: an
//     empty entry beside non-empty ones would mix sentinel and standalone
//     instances, which is refused.
//   - DBAAS_NODE_COUNT, a positive integer (default 1), is the number of
//     nodes of each instance; Health expects that many (NodeCount).
//
// The Store owns the pools it makes and closes them in Close. Connections
// get a 5 s connect timeout and the WithDialOptions options. Nothing is
// dialled here: use IsActive to check the instances.
func NewFromEnv(opts ...Option) (*Store, error) {
	cfg, err := applyOptions(opts)
	if err != nil {
		return nil, err
	}
	insts, err := configFromEnv(cfg.lookupEnv)
	if err != nil {
		return nil, err
	}
	if !cfg.nodeCountSet {
		if cfg.nodeCount, err = nodeCountFromEnv(cfg.lookupEnv); err != nil {
			return nil, err
		}
	}
	dialOpts := append([]redis.DialOption{redis.DialConnectTimeout(5 * time.Second)}, cfg.dialOpts...)
	pools := make([]redlock.Pool, len(insts))
	owned := make([]io.Closer, len(insts))
	for i, ic := range insts {
		if ic.SentinelAddr != "" {
			p := newSentinelPool(ic.SentinelAddr, ic.MasterName, dialOpts)
			pools[i], owned[i] = p, p
			continue
		}
		p, err := redlock.NewPool("redis://"+ic.Addr, dialOpts...)
		if err != nil {
			return nil, invalidArg("instance %d address %q: %v", i, ic.Addr, err)
		}
		pools[i], owned[i] = p, p
	}
	s, err := newStore(pools, cfg, owned)
	if err != nil {
		for _, c := range owned {
			c.Close()
		}
		return nil, err
	}
	for i, ic := range insts {
		s.insts[i].name = ic.Addr
	}
	return s, nil
}

// configFromEnv reads the DBAAS_* variables into one config per instance.
func configFromEnv(lookup func(string) (string, bool)) ([]instanceConfig, error) {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	var hosts []string
	if l := get(EnvClusterAddrList); l != "" {
		var err error
		if hosts, err = splitList(EnvClusterAddrList, l); err != nil {
			return nil, err
		}
	} else if h := get(EnvServiceHost); h != "" {
		hosts = []string{h}
	} else {
		return nil, invalidArg("neither %s nor %s is set", EnvServiceHost, EnvClusterAddrList)
	}
	n := len(hosts)
	ports, err := padList(EnvServicePort, get(EnvServicePort), n, DefaultPort)
	if err != nil {
		return nil, err
	}
	sentinelPorts, err := sentinelPortList(get(EnvSentinelPort), n)
	if err != nil {
		return nil, err
	}
	masters, err := padList(EnvMasterName, get(EnvMasterName), n, "")
	if err != nil {
		return nil, err
	}
	out := make([]instanceConfig, n)
	for i, h := range hosts {
		if sentinelPorts[i] == "" {
			if err := checkPort(EnvServicePort, ports[i]); err != nil {
				return nil, err
			}
			out[i].Addr = net.JoinHostPort(h, ports[i])
			continue
		}
		if err := checkPort(EnvSentinelPort, sentinelPorts[i]); err != nil {
			return nil, err
		}
		if masters[i] == "" {
			return nil, invalidArg("%s is set but %s is not", EnvSentinelPort, EnvMasterName)
		}
		out[i].SentinelAddr = net.JoinHostPort(h, sentinelPorts[i])
		out[i].MasterName = masters[i]
	}
	return out, nil
}

// sentinelPortList reads DBAAS_SERVICE_SENTINEL_PORT for n instances:
// padded like the other lists, and refused when it gives some instances a
// port and others none.
func sentinelPortList(v string, n int) ([]string, error) {
	if v == "" {
		return make([]string, n), nil // no sentinel anywhere
	}
	if strings.Trim(v, " ,") == "" {
		return nil, invalidArg("%s=%q has only empty entries", EnvSentinelPort, v)
	}
	parts := strings.Split(v, ",")
	out := make([]string, n)
	for i := range out {
		out[i] = strings.TrimSpace(parts[min(i, len(parts)-1)])
		if out[i] == "" {
			return nil, invalidArg("%s=%q gives instance %d no sentinel port while others have one: instances must be all sentinel-managed or all standalone",
				EnvSentinelPort, v, i)
		}
	}
	return out, nil
}

// nodeCountFromEnv reads DBAAS_NODE_COUNT: a positive integer, 1 if unset.
func nodeCountFromEnv(lookup func(string) (string, bool)) (int, error) {
	v, _ := lookup(EnvNodeCount)
	if v = strings.TrimSpace(v); v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, invalidArg("%s=%q is not a positive number of nodes", EnvNodeCount, v)
	}
	return n, nil
}

// splitList splits a comma list, rejecting empty entries.
func splitList(name, v string) ([]string, error) {
	parts := strings.Split(v, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
		if parts[i] == "" {
			return nil, invalidArg("%s=%q has an empty entry", name, v)
		}
	}
	return parts, nil
}

// padList splits a comma list and pads it to n entries by repeating the
// last; an empty v gives n copies of def.
func padList(name, v string, n int, def string) ([]string, error) {
	out := make([]string, n)
	if v == "" {
		for i := range out {
			out[i] = def
		}
		return out, nil
	}
	parts, err := splitList(name, v)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i] = parts[min(i, len(parts)-1)]
	}
	return out, nil
}

// checkPort validates a TCP port number.
func checkPort(name, p string) error {
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return invalidArg("%s: %q is not a port number", name, p)
	}
	return nil
}
