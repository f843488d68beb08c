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
	calls     int64   // commands run, INFO excluded, those run by scripts included
	scripts   int64   // script calls (EVAL, EVALSHA, FCALL and their _RO forms)
	cpu       float64 // used_cpu_user + used_cpu_sys, seconds
	processed int64   // total_commands_processed
	events    int64   // total_reads_processed + total_writes_processed
	read      int     // nodes read
}

// processedSince returns the commands the nodes processed since before,
// the INFO calls of the reads left out (InfoCalls per node).
func (s serverStats) processedSince(before serverStats) int64 {
	return s.processed - before.processed - InfoCalls*int64(s.read)
}

// readServerStats reads INFO commandstats, cpu and stats from every node.
// Nodes that cannot be read count as zero.
func readServerStats(ctx context.Context, nodes []redlock.Pool) serverStats {
	var st serverStats
	for _, p := range nodes {
		s, err := ServerStats(ctx, p)
		if err == nil {
			st.calls += s.Calls
			st.scripts += s.ScriptCalls
			st.cpu += s.CPUSeconds
			st.processed += s.Processed
			st.events += s.Events
			st.read++
		}
	}
	return st
}

// InfoCalls is the number of INFO commands one ServerStats call sends. The
// node counts a command in total_commands_processed once it has run, so
// Processed includes those of every earlier ServerStats call on the node
// and the first InfoCalls-1 of its own: the difference of two reads counts
// InfoCalls of them.
const InfoCalls = 3

// NodeStats are the cumulative counters of one Redis node.
type NodeStats struct {
	// Calls is the number of commands the node has run since it started,
	// from INFO commandstats, INFO itself excluded. Redis counts the
	// commands a script runs (redis.call) as well as the script call.
	Calls int64
	// ScriptCalls is the number of script calls among them: EVAL, EVALSHA,
	// FCALL and their read-only forms.
	ScriptCalls int64
	// CPUSeconds is used_cpu_user + used_cpu_sys from INFO cpu.
	CPUSeconds float64
	// Processed is total_commands_processed from INFO stats: every command
	// the node has run, INFO included (see InfoCalls), the commands run by
	// scripts included.
	Processed int64
	// Events is total_reads_processed + total_writes_processed from INFO
	// stats: the reads and writes of client connections by the event loop.
	Events int64
}

// ServerStats reads the command and CPU counters of one node: INFO
// commandstats, INFO cpu and INFO stats, in that order.
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
	stats, err := redis.String(redis.DoContext(c, ctx, "INFO", "stats"))
	if err != nil {
		return NodeStats{}, err
	}
	calls, scripts := parseCalls(cmds)
	return NodeStats{Calls: calls, ScriptCalls: scripts, CPUSeconds: parseCPU(cpu), Processed: parseProcessed(stats),
		Events: infoField(stats, "total_reads_processed") + infoField(stats, "total_writes_processed")}, nil
}

// parseProcessed returns total_commands_processed of INFO stats.
func parseProcessed(info string) int64 { return infoField(info, "total_commands_processed") }

// parseCalls sums the calls= fields of INFO commandstats lines such as
// "cmdstat_set:calls=12,usec=30,...", skipping the INFO command, and
// separately those of the script commands.
func parseCalls(info string) (total, scripts int64) {
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
				switch name {
				case "cmdstat_eval", "cmdstat_evalsha", "cmdstat_eval_ro", "cmdstat_evalsha_ro", "cmdstat_fcall", "cmdstat_fcall_ro":
					scripts += n
				}
			}
		}
	}
	return total, scripts
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

// nodeMemory is the memory of nodes, summed.
type nodeMemory struct {
	used        int64 // used_memory of INFO memory
	trackedKeys int64 // tracking_total_keys of INFO stats
	read        int   // nodes read
}

// readNodeMemory reads INFO memory and INFO stats from every node. Nodes
// that cannot be read are left out of the sums and of read.
func readNodeMemory(ctx context.Context, nodes []redlock.Pool) nodeMemory {
	var m nodeMemory
	for _, p := range nodes {
		used, tracked, err := memoryOf(ctx, p)
		if err == nil {
			m.used += used
			m.trackedKeys += tracked
			m.read++
		}
	}
	return m
}

// memoryOf reads a node's used_memory (INFO memory) and the number of
// keys it tracks for client-side caching (tracking_total_keys of INFO
// stats).
func memoryOf(ctx context.Context, p redlock.Pool) (used, trackedKeys int64, err error) {
	c, err := p.GetContext(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	mem, err := redis.String(redis.DoContext(c, ctx, "INFO", "memory"))
	if err != nil {
		return 0, 0, err
	}
	stats, err := redis.String(redis.DoContext(c, ctx, "INFO", "stats"))
	if err != nil {
		return 0, 0, err
	}
	return infoField(mem, "used_memory"), infoField(stats, "tracking_total_keys"), nil
}

// infoField returns the integer field name of an INFO section, 0 when
// absent.
func infoField(info, name string) int64 {
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), name+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
