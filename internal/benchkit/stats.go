package benchkit

import (
	"bufio"
	"context"
	"strconv"
	"strings"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockplus/redlock"
)

// serverStats are counters summed over nodes.
type serverStats struct {
	calls int64   // commands run, INFO excluded
	cpu   float64 // used_cpu_user + used_cpu_sys, seconds
}

// readServerStats reads INFO commandstats and INFO cpu from every node.
// Nodes that cannot be read count as zero.
func readServerStats(ctx context.Context, nodes []redlock.Pool) serverStats {
	var st serverStats
	for _, p := range nodes {
		s, err := ServerStats(ctx, p)
		if err == nil {
			st.calls += s.Calls
			st.cpu += s.CPUSeconds
		}
	}
	return st
}

// NodeStats are the cumulative counters of one Redis node.
type NodeStats struct {
	// Calls is the number of commands the node has run since it started,
	// from INFO commandstats, INFO itself excluded.
	Calls int64
	// CPUSeconds is used_cpu_user + used_cpu_sys from INFO cpu.
	CPUSeconds float64
}

// ServerStats reads the command and CPU counters of one node.
func ServerStats(ctx context.Context, p redlock.Pool) (NodeStats, error) {
	c, err := p.GetContext(ctx)
	if err != nil {
		return NodeStats{}, err
	}
	defer c.Close()
	cmds, err := redis.String(redis.DoContext(c, ctx, "INFO", "commandstats"))
	if err != nil {
		return NodeStats{}, err
	}
	cpu, err := redis.String(redis.DoContext(c, ctx, "INFO", "cpu"))
	if err != nil {
		return NodeStats{}, err
	}
	return NodeStats{Calls: parseCalls(cmds), CPUSeconds: parseCPU(cpu)}, nil
}

// parseCalls sums the calls= fields of INFO commandstats lines such as
// "cmdstat_set:calls=12,usec=30,...", skipping the INFO command.
func parseCalls(info string) int64 {
	var total int64
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		name, fields, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		for _, f := range strings.Split(fields, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				total += n
			}
		}
	}
	return total
}

// parseCPU returns used_cpu_user + used_cpu_sys of INFO cpu.
func parseCPU(info string) float64 {
	var total float64
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		name, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if ok && (name == "used_cpu_user" || name == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}
