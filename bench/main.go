// Command bench measures this module's redlock package side by side with
// go-redsync/redsync v4, rueidislock and a floor (raw redigo sending the
// same commands with no lock logic), on real redis-server nodes that it
// starts on free loopback ports, over the workloads W1..W6 of issue 5 and
// W7..W9 of issue 15; and, on W1-3 and W2, this package over a Redis
// Cluster of 3 masters, without replicas and with one per master and
// WithReplicaAck(1), and over 3 nodes with a replica each and
// WithReplicaAck(1): targets that start those servers themselves
// (cluster.go).
//
// It prints a table of the results and of the goals (ratios measured in the
// same run), writes results.json and PNG charts under -out, and shows a
// progress bar on stderr. From the repository root:
//
//	go run -C bench .                 # full run, a few minutes
//	go run -C bench . -quick          # smoke run, well under a minute
//	go run -C bench . -workloads W1,W3 -out /tmp/bench
//	go run -C bench . -workloads W2 -targets redlock -cpuprofile w2.cpu -memprofile w2.heap
//
// bench is a module of its own (bench/go.mod), so that redsync and the
// plotting libraries stay out of the root module's dependencies; `cd bench
// && go run .` is the same as the -C form.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/schollz/progressbar/v3"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/benchkit"
	"github.com/redlockplus/redlock/internal/testkit/delayproxy"
)

// slowRTT is what the delay proxy of W4 adds to every round trip.
const slowRTT = 50 * time.Millisecond

// poolSize bounds the connections of each pool per node.
const poolSize = 256

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// config is the parsed command line.
type config struct {
	quick     bool
	out       string
	workloads []benchkit.Workload
	rounds    int
	redisBin  string
	args      []string
	observed  bool      // -observed
	targets   []string  // -targets; nil: all
	profiles  *profiles // -cpuprofile, -memprofile, -profile-after, -profile-for
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "short runs, for a CI smoke test; the ratios are then only indicative")
	out := fs.String("out", defaultOut(), "directory for results.json and charts/")
	only := fs.String("workloads", "", "comma-separated workloads to run, such as W1,W3 (default: all of W1..W9)")
	rounds := fs.Int("rounds", 0, "interleaved rounds per workload, to even out a noisy machine (default 5, 1 with -quick)")
	bin := fs.String("redis-server", "redis-server", "the redis-server binary")
	observed := fs.Bool("observed", false, "also measure redlock with a no-op observer (redlock-noop) and the otel module's (redlock-otel)")
	targets := fs.String("targets", "", "comma-separated targets to measure, such as redlock,redsync (default: all); a goal is checked when its targets ran")
	locks := fs.String("w7-locks", "", "W7 holds this many locks instead of 100,000; a comma-separated list runs W7 once per count, as W7-<count> (the curve: 10000,100000,1000000)")
	prof := &profiles{}
	fs.StringVar(&prof.cpu, "cpuprofile", "", "write a CPU profile of the run (go tool pprof) to this file")
	fs.StringVar(&prof.heap, "memprofile", "", "write a heap profile to this file, at the end of the run or -profile-after into it")
	fs.DurationVar(&prof.after, "profile-after", 0, "take the heap profile and start the CPU profile this long after the workloads start (W7's locks while held)")
	fs.DurationVar(&prof.dur, "profile-for", 0, "end the CPU profile this long after -profile-after (default: at the end of the run)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if prof.after < 0 || prof.dur < 0 {
		return config{}, fmt.Errorf("bench: -profile-after %v and -profile-for %v must not be negative", prof.after, prof.dur)
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("bench: unexpected arguments %q", fs.Args())
	}
	ws, err := selectWorkloads(benchkit.Standard(*quick), *only)
	if err != nil {
		return config{}, err
	}
	if ws, err = w7Counts(ws, *locks); err != nil {
		return config{}, err
	}
	r := *rounds
	switch {
	case r < 0:
		return config{}, fmt.Errorf("bench: -rounds %d is negative", r)
	case r == 0 && *quick:
		r = 1
	case r == 0:
		r = 5
	}
	var names []string
	for _, n := range strings.Split(*targets, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return config{quick: *quick, out: *out, workloads: ws, rounds: r, redisBin: *bin, args: args, observed: *observed, targets: names, profiles: prof}, nil
}

// defaultOut is bench/ when run from the repository root (with a go.work),
// else the current directory.
func defaultOut() string {
	if _, err := os.Stat(filepath.Join("bench", "go.mod")); err == nil {
		return "bench"
	}
	return "."
}

// selectWorkloads keeps the workloads whose goal or id is listed.
func selectWorkloads(all []benchkit.Workload, list string) ([]benchkit.Workload, error) {
	if strings.TrimSpace(list) == "" {
		return all, nil
	}
	var out []benchkit.Workload
	for _, id := range strings.Split(list, ",") {
		id = strings.ToUpper(strings.TrimSpace(id))
		found := false
		for _, w := range all {
			if (w.Goal() == id || w.ID == id) && !slices.ContainsFunc(out, func(o benchkit.Workload) bool { return o.ID == w.ID }) {
				out = append(out, w)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("bench: unknown workload %q (known: W1..W9, W1-3, W1-5)", id)
		}
	}
	return out, nil
}

// selectTargets keeps the targets named in names, in table order; none
// named keeps them all.
func selectTargets(all []target, names []string) ([]target, error) {
	if len(names) == 0 {
		return all, nil
	}
	var out []target
	for _, t := range all {
		if slices.Contains(names, t.name) {
			out = append(out, t)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(all, func(t target) bool { return t.name == n }) {
			return nil, fmt.Errorf("bench: unknown target %q", n)
		}
	}
	return out, nil
}

// target is one implementation the tool measures.
type target struct {
	name string
	// build makes the target over the nodes at addrs, reached through
	// pools (targets of other clients dial addrs themselves).
	build func(addrs []string, pools []*redis.Pool, w benchkit.Workload) (benchkit.Target, error)
	// start, set instead of build, makes a target on servers it starts
	// from the redis-server binary bin and stops at its Close (a Redis
	// Cluster, nodes with replicas: cluster.go), within ctx. The tool's
	// nodes are not used; the node figures of its runs are its servers'
	// (serverOwner).
	start func(ctx context.Context, bin string, w benchkit.Workload) (benchkit.Target, error)
	runs  func(w benchkit.Workload) bool
}

// serverOwner is a target made by target.start: the workload reads the
// node figures of its runs (INFO cpu and stats) from statNodes, every
// server it started, replicas included, instead of the tool's nodes.
type serverOwner interface {
	statNodes() []redlock.Pool
}

// targets returns the implementations in table order.
func targets() []target {
	all := func(benchkit.Workload) bool { return true }
	ts := []target{{
		name: "redlock",
		build: func(_ []string, ps []*redis.Pool, _ benchkit.Workload) (benchkit.Target, error) {
			return benchkit.Ours("redlock", lockPools(ps))
		},
		runs: all,
	}}
	if opts, ok := plainPoolOptions(); ok {
		ts = append(ts, target{
			name: "redlock-plain",
			build: func(_ []string, ps []*redis.Pool, _ benchkit.Workload) (benchkit.Target, error) {
				return benchkit.Ours("redlock-plain", lockPools(ps), opts...)
			},
			runs: all,
		})
	}
	ts = append(ts, ownServerTargets()...)
	ts = append(ts, lossDetectionTargets()...)
	ts = append(ts, featureTargets()...)
	ts = append(ts, adapterTargets()...)
	ts = append(ts, rueidislockTargets()...)
	ts = append(ts,
		target{
			name: "redlock-fenced",
			build: func(_ []string, ps []*redis.Pool, _ benchkit.Workload) (benchkit.Target, error) {
				return benchkit.Ours("redlock-fenced", lockPools(ps), redlock.WithFencing(true))
			},
			// Fencing adds one round trip to an acquisition: its cost shows
			// in the uncontended cycle.
			runs: func(w benchkit.Workload) bool { return w.Goal() == "W1" },
		},
		recipeTarget("redlock-semaphore", func(f *redlock.Factory, key string) redlock.Locker { return f.NewSemaphore(key, 4) }),
		recipeTarget("redlock-read", func(f *redlock.Factory, key string) redlock.Locker { return f.NewReadLock(key) }),
		recipeTarget("redlock-write", func(f *redlock.Factory, key string) redlock.Locker { return f.NewWriteLock(key) }),
		recipeTarget("redlock-multi2", func(f *redlock.Factory, key string) redlock.Locker {
			return f.NewMultiLock([]string{key + ":a", key + ":b"})
		}),
		recipeTarget("redlock-election", func(f *redlock.Factory, key string) redlock.Locker { return campaigner{f.NewElection(key)} }),
		target{
			name: "redsync",
			build: func(_ []string, ps []*redis.Pool, _ benchkit.Workload) (benchkit.Target, error) {
				return newRedsync("redsync", ps, false), nil
			},
			runs: all,
		},
		target{
			name: "redsync-failfast",
			build: func(_ []string, ps []*redis.Pool, _ benchkit.Workload) (benchkit.Target, error) {
				return newRedsync("redsync-failfast", ps, true), nil
			},
			runs: func(w benchkit.Workload) bool { return w.Kind != benchkit.Keep },
		},
		target{
			name: "floor-pipelined",
			build: func(_ []string, ps []*redis.Pool, _ benchkit.Workload) (benchkit.Target, error) {
				return benchkit.PipeFloor("floor-pipelined", lockPools(ps)), nil
			},
			// Only where it tells what the transport costs: the cycle
			// workloads that measure CPU per cycle (W1, W2).
			runs: func(w benchkit.Workload) bool {
				return (w.Goal() == "W1" || w.Goal() == "W2") && w.Kind != benchkit.Keep && !w.SharedKey
			},
		},
		target{
			name: "floor",
			build: func(_ []string, ps []*redis.Pool, w benchkit.Workload) (benchkit.Target, error) {
				return benchkit.Floor("floor", lockPools(ps), w.FloorAtQuorum), nil
			},
			// The floor has no lock logic: it cannot wait for a busy key
			// or keep a lock alive.
			runs: func(w benchkit.Workload) bool { return w.Kind != benchkit.Keep && !w.SharedKey },
		},
	)
	return append(ts, nodeCountTargets()...)
}

// recipeTarget measures one of the other primitives on the uncontended
// cycle (W1), beside a plain Lock.
func recipeTarget(name string, make func(f *redlock.Factory, key string) redlock.Locker) target {
	return target{
		name: name,
		build: func(_ []string, ps []*redis.Pool, _ benchkit.Workload) (benchkit.Target, error) {
			return benchkit.OursRecipe(name, lockPools(ps), make)
		},
		runs: func(w benchkit.Workload) bool { return w.Goal() == "W1" },
	}
}

// campaigner is an Election as a Locker for the benchmark: a cycle is
// Campaign and Resign.
type campaigner struct{ *redlock.Election }

func (c campaigner) Token() string { return "" }

func (c campaigner) Acquire(ctx context.Context) (time.Duration, error) {
	return 0, c.Campaign(ctx, "bench")
}

func (c campaigner) TryAcquire(ctx context.Context) (time.Duration, error) { return c.Acquire(ctx) }

func (c campaigner) Extend(context.Context) (time.Duration, error) { return 0, nil }

func (c campaigner) Release(ctx context.Context) error { return c.Resign(ctx) }

func lockPools(ps []*redis.Pool) []redlock.Pool {
	out := make([]redlock.Pool, len(ps))
	for i, p := range ps {
		out[i] = p
	}
	return out
}

// newPools returns one fresh redigo pool per address, configured alike for
// every target: idle connections enough for the widest workload, so that no
// target pays for dialling in the middle of a run, and at most that many
// connections, callers waiting for a free one (as a production pool would
// be set up), so that thousands of concurrent commands do not storm the
// node with dials.
func newPools(addrs []string) ([]*redis.Pool, error) {
	out := make([]*redis.Pool, len(addrs))
	for i, a := range addrs {
		p, err := redlock.NewPool("redis://" + a)
		if err != nil {
			return nil, err
		}
		p.MaxIdle, p.MaxActive, p.Wait = poolSize, poolSize, true
		out[i] = p
	}
	return out, nil
}

func closePools(ps []*redis.Pool) {
	for _, p := range ps {
		_ = p.Close()
	}
}

// env is what the workloads run on.
type env struct {
	addrs   []string // direct addresses of the nodes
	slow    string   // the delay proxy's address in front of the last node
	rounds  int
	bar     *progressbar.ProgressBar
	targets []target
	notes   []string // remarks for the report

	// redisBin is the redis-server binary, for the targets that start
	// servers of their own (target.start).
	redisBin string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	started := time.Now()
	count := 0
	for _, w := range cfg.workloads {
		count = max(count, w.NodeCount)
	}
	nodesStarted := time.Now()
	nodes, err := startNodes(ctx, cfg.redisBin, count)
	if err != nil {
		return err
	}
	defer stopNodes(nodes)
	if err := benchkit.NodesReady(ctx, nodesStarted); err != nil {
		return err
	}
	e := env{rounds: cfg.rounds, targets: targets(), redisBin: cfg.redisBin}
	if cfg.observed {
		e.targets = append(e.targets[:1:1], append(observedTargets(), e.targets[1:]...)...)
	}
	if e.targets, err = selectTargets(e.targets, cfg.targets); err != nil {
		return err
	}
	for _, n := range nodes {
		e.addrs = append(e.addrs, n.addr)
	}
	if i := slices.IndexFunc(cfg.workloads, func(w benchkit.Workload) bool { return w.SlowNode }); i >= 0 {
		px, err := delayproxy.Start(nodes[cfg.workloads[i].NodeCount-1].addr, slowRTT)
		if err != nil {
			return err
		}
		defer px.Close()
		e.slow = px.Addr()
	}

	steps := 0
	for _, w := range cfg.workloads {
		steps += len(e.applicable(w)) * e.roundsOf(w)
	}
	e.bar = progressbar.NewOptions(steps,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription("starting"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
	)

	rep := newReport(cfg, e)
	if err := cfg.profiles.start(); err != nil {
		return err
	}
	for _, w := range cfg.workloads {
		results, rounds, err := e.runWorkload(ctx, w)
		if err != nil {
			_ = cfg.profiles.stop()
			return err
		}
		rep.add(w, results, rounds)
	}
	if err := cfg.profiles.stop(); err != nil {
		return err
	}
	rep.Notes = append(rep.Notes, e.notes...)
	_ = e.bar.Finish()
	rep.finish(started, cfg.redisBin)

	rep.printTables(stdout)
	if err := os.MkdirAll(filepath.Join(cfg.out, "charts"), 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	path := filepath.Join(cfg.out, "results.json")
	if err := rep.writeJSON(path); err != nil {
		return err
	}
	if err := rep.writeMarkdown(filepath.Join(cfg.out, "results.md")); err != nil {
		return err
	}
	charts, err := drawCharts(rep, filepath.Join(cfg.out, "charts"))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s, results.md and %d charts in %s\n", path, len(charts), filepath.Join(cfg.out, "charts"))
	return nil
}

// applicable returns the targets that run w.
func (e *env) applicable(w benchkit.Workload) []target {
	var out []target
	for _, t := range e.targets {
		if t.runs(w) && !excluded(w, t.name) {
			out = append(out, t)
		}
	}
	return out
}

// roundsOf is how many interleaved rounds w is split into.
func (e *env) roundsOf(w benchkit.Workload) int {
	if w.Kind == benchkit.Keep {
		return 1
	}
	return e.rounds
}

// nodeAddrs returns the addresses a target uses for w: the first
// w.NodeCount nodes, the last of them through the delay proxy for W4.
func (e *env) nodeAddrs(w benchkit.Workload) []string {
	addrs := slices.Clone(e.addrs[:w.NodeCount])
	if w.SlowNode {
		addrs[len(addrs)-1] = e.slow
	}
	return addrs
}

// runWorkload measures every applicable target on w, in rounds whose
// target order rotates, and merges each target's rounds. It also returns
// the rounds, each target's in the order of the merged results.
func (e *env) runWorkload(ctx context.Context, w benchkit.Workload) ([]benchkit.Result, [][]benchkit.Result, error) {
	ts := e.applicable(w)
	built := make([]benchkit.Target, len(ts))
	var pools [][]*redis.Pool
	defer func() {
		for _, b := range built {
			if b != nil {
				_ = b.Close()
			}
		}
		for _, ps := range pools {
			closePools(ps)
		}
	}()
	for i, t := range ts {
		if t.start != nil {
			continue // below
		}
		addrs := e.nodeAddrs(w)
		ps, err := newPools(addrs)
		if err != nil {
			return nil, nil, err
		}
		pools = append(pools, ps)
		if built[i], err = t.build(addrs, ps, w); err != nil {
			return nil, nil, fmt.Errorf("bench: %s: %w", t.name, err)
		}
	}
	if err := e.startOwn(ctx, ts, built, w); err != nil {
		return nil, nil, err
	}
	if w.Kind != benchkit.Allocs {
		// Raw pools of the workload's nodes: INFO is read and keys are
		// broken on connections of no target.
		raw, err := newPools(e.addrs[:w.NodeCount])
		if err != nil {
			return nil, nil, err
		}
		pools = append(pools, raw)
		w.Nodes = lockPools(raw)
	}
	rounds := e.roundsOf(w)
	per := w
	per.Duration = w.Duration / time.Duration(rounds)
	per.Ops = max(w.Ops/rounds, 1)
	parts := make([][]benchkit.Result, len(ts))
	for r := range rounds {
		for k := range ts {
			i := (k + r) % len(ts)
			e.bar.Describe(fmt.Sprintf("%-5s %-17s round %d/%d", w.ID, ts[i].name, r+1, rounds))
			wi := per
			if o, ok := built[i].(serverOwner); ok && per.Nodes != nil {
				wi.Nodes = o.statNodes()
			}
			runtime.GC()
			res, err := benchkit.Run(ctx, built[i], wi)
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, nil, ctxErr
			}
			if err != nil {
				res.Workload, res.Target = w.ID, ts[i].name
				res.Errors++
				res.FirstError = err.Error()
			}
			parts[i] = append(parts[i], res)
			_ = e.bar.Add(1)
		}
	}
	out := make([]benchkit.Result, len(ts))
	for i := range ts {
		out[i] = benchkit.Merge(parts[i]...)
		if rt, ok := built[i].(*redsyncTarget); ok {
			if n, err := rt.extendFailures(); n > 0 {
				e.notes = append(e.notes, fmt.Sprintf("%s %s: %d extensions failed; the first: %v", w.ID, ts[i].name, n, oneLine(err.Error())))
			}
		}
	}
	return out, parts, nil
}

// startOwn makes the targets of ts that start servers of their own
// (target.start) into built, all at once: each waits for its servers to
// come up and to be old enough to vote (benchkit.NodesReady). On error
// the targets made are left in built, for the caller to close.
func (e *env) startOwn(ctx context.Context, ts []target, built []benchkit.Target, w benchkit.Workload) error {
	errs := make([]error, len(ts))
	var wg sync.WaitGroup
	for i, t := range ts {
		if t.start != nil {
			e.bar.Describe(fmt.Sprintf("%-5s starting servers", w.ID))
			wg.Go(func() { built[i], errs[i] = t.start(ctx, e.redisBin, w) })
		}
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("bench: %s: %w", ts[i].name, err)
		}
	}
	return nil
}

// w7Counts replaces W7 in ws by one workload per lock count of the
// comma-separated list: W7 itself for one count, W7-<count> for several.
func w7Counts(ws []benchkit.Workload, list string) ([]benchkit.Workload, error) {
	if strings.TrimSpace(list) == "" {
		return ws, nil
	}
	var counts []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bench: -w7-locks %q: %q is not a positive lock count", list, f)
		}
		counts = append(counts, n)
	}
	var out []benchkit.Workload
	for _, w := range ws {
		if w.ID != "W7" {
			out = append(out, w)
			continue
		}
		for _, n := range counts {
			v := w
			v.Locks = n
			if len(counts) > 1 {
				v.ID = "W7-" + strconv.Itoa(n)
			}
			v.Title = fmt.Sprintf("%d locks kept alive with autoextend, TTL %v, for %v", n, w.TTL, w.Duration)
			out = append(out, v)
		}
	}
	return out, nil
}
