package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/benchkit"
	"github.com/spf13/cobra"
)

// benchRow is one measured (workload, target) pair.
type benchRow struct {
	benchkit.Result
	Title string `json:"title"`
}

// benchReport is the --json output of bench.
type benchReport struct {
	Nodes []string `json:"nodes"`
	// Embedded: the nodes are embedded Go servers (miniredis), started by
	// bench itself or found to be such, e.g. the nodes of 'redlock dev'.
	Embedded       bool       `json:"embedded"`
	Representative bool       `json:"representative"`
	Results        []benchRow `json:"results"`
}

func newBenchCmd() *cobra.Command {
	var nf *nodeFlags
	var perRun time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "A short benchmark of the lock against the raw-redigo floor",
		Long: `Run a short form of the performance benchmark against the configured
nodes (--nodes or REDLOCK_NODES), or against 3 embedded nodes when none are
configured. Each workload runs for --duration with this library ("redlock")
and, where it applies, with raw redigo doing the same Redis commands with no
lock logic ("floor"):

  W1  1 goroutine, uncontended lock+unlock
  W2  64 goroutines, distinct keys
  W3  16 goroutines, one key, hold 1 ms, think 5 ms (overlaps counted)

Numbers from embedded nodes measure an in-process Go server sharing the
CPU with the benchmark: they are not representative of Redis. The full
benchmark is in bench/ (see its README).`,
		Args:              exactArgs(0, "no arguments"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if perRun < 100*time.Millisecond || perRun > 5*time.Minute {
				return usageErr("--duration %v: choose 100ms to 5m", perRun)
			}
			urls, _, err := nf.urls()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			rep := benchReport{}
			if urls == nil {
				e, err := startEmbedded(3, 0)
				if err != nil {
					return err
				}
				defer e.close()
				urls, rep.Embedded = e.urls(), true
			}
			rep.Representative = !rep.Embedded
			return runBench(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), urls, perRun, asJSON, rep)
		},
	}
	nf = addIndependentNodeFlags(cmd)
	cmd.Flags().DurationVar(&perRun, "duration", time.Second, "how long each workload runs for each target")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	return cmd
}

func runBench(ctx context.Context, out, errw io.Writer, urls []string, perRun time.Duration, asJSON bool, rep benchReport) error {
	c, err := openCluster(ctx, nodeList{urls: urls})
	if err != nil {
		return err
	}
	_, err = c.requireQuorum(ctx, len(urls))
	var notRedis []string
	if err == nil && !rep.Embedded {
		notRedis = c.notRedis(ctx)
		rep.Embedded = len(notRedis) > 0
		rep.Representative = !rep.Embedded
	}
	c.close()
	if err != nil {
		return err
	}
	s := newStyle(out)
	for _, u := range urls {
		rep.Nodes = append(rep.Nodes, hostOf(u))
	}
	if !asJSON {
		where, why := "configured nodes", ""
		switch {
		case len(notRedis) > 0:
			where += ", embedded"
			which := "the nodes are"
			if len(notRedis) < len(urls) {
				which = strings.Join(notRedis, ", ") + " are"
			}
			why = which + " embedded Go servers (miniredis, as 'redlock dev' starts), not Redis."
		case rep.Embedded:
			where = "embedded nodes (miniredis, in this process)"
			why = "embedded nodes are a Go server inside this process, sharing its CPU."
		}
		fmt.Fprintf(out, "%s %d %s, %v per workload and target\n  %s\n",
			s.bold("redlock bench:"), len(urls), where, perRun, s.dim(strings.Join(rep.Nodes, "  ")))
		if rep.Embedded {
			fmt.Fprintf(out, "%s\n%s\n", s.yellow("⚠ NOT REPRESENTATIVE: "+why),
				s.yellow("  Run 'redlock bench --nodes redis://...' against real Redis servers."))
		}
	}

	// Every key of this run starts with prefix, so that the keys the floor
	// target leaves behind when the run's deadline cuts a Lock short (it
	// does not clean up) can be deleted at the end.
	prefix := "redlock-bench:" + randomHex(4) + ":"
	defer deleteKeys(urls, prefix)

	type job struct {
		w      benchkit.Workload
		target string
	}
	var jobs []job
	for _, w := range benchkit.Standard(true) {
		switch w.Goal() {
		case "W1", "W2", "W3":
		default:
			continue
		}
		if w.Goal() == "W1" && w.NodeCount != 3 {
			continue // one W1 is enough: the one for 3 nodes, run on ours
		}
		w.NodeCount, w.Duration, w.KeyPrefix = len(urls), perRun, prefix
		w.ID = w.Goal()
		w.Title = strings.Replace(w.Title, ", 3 nodes", "", 1)
		jobs = append(jobs, job{w, "redlock"})
		if !w.SharedKey {
			jobs = append(jobs, job{w, "floor"}) // the floor does not retry: uncontended only
		}
	}

	bar := newProgressBar(errw, time.Duration(len(jobs))*perRun)
	if asJSON {
		bar = newProgressBar(io.Discard, 0)
	}
	for _, j := range jobs {
		bar.begin(fmt.Sprintf("%s %s", j.w.ID, j.target), perRun)
		res, err := benchOne(ctx, urls, j.w, j.target)
		bar.end()
		if err != nil {
			bar.finish()
			if ctx.Err() != nil {
				return exitCode(exitFailure, errors.New("bench interrupted"))
			}
			return err
		}
		rep.Results = append(rep.Results, benchRow{Result: res, Title: j.w.Title})
	}
	bar.finish()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return exitCode(exitFailure, enc.Encode(rep))
	}
	printBench(out, s, rep)
	if rep.Embedded {
		fmt.Fprintf(out, "%s\n", s.yellow("⚠ Embedded nodes: these numbers are NOT REPRESENTATIVE of Redis."))
	}
	for _, r := range rep.Results {
		if r.Overlaps > 0 {
			return exitCode(exitFailure, fmt.Errorf("%s %s: %d overlaps: two holders at once", r.Workload, r.Target, r.Overlaps))
		}
	}
	return nil
}

// benchOne runs one workload on one target over fresh pools.
func benchOne(ctx context.Context, urls []string, w benchkit.Workload, target string) (benchkit.Result, error) {
	var pools []redlock.Pool
	var closers []func() error
	defer func() {
		for _, c := range closers {
			_ = c()
		}
	}()
	for _, u := range urls {
		p, err := redlock.NewPool(u)
		if err != nil {
			return benchkit.Result{}, classify(err)
		}
		pools = append(pools, p)
		closers = append(closers, p.Close)
	}
	var t benchkit.Target
	if target == "floor" {
		t = benchkit.Floor(target, pools, false)
	} else {
		o, err := benchkit.Ours(target, pools)
		if err != nil {
			return benchkit.Result{}, classify(err)
		}
		t = o
	}
	res, err := benchkit.Run(ctx, t, w)
	if cerr := t.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return res, exitCode(exitUnavailable, fmt.Errorf("%s %s: %w", w.ID, target, err))
	}
	return res, nil
}

// deleteKeys deletes the keys starting with prefix on every node.
func deleteKeys(urls []string, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, u := range urls {
		p, err := redlock.NewPool(u)
		if err != nil {
			continue
		}
		_ = scanPool(ctx, p, prefix+"*", func(keys []string) {
			if conn, err := p.GetContext(ctx); err == nil {
				_, _ = redis.DoContext(conn, ctx, "DEL", redis.Args{}.AddFlat(keys)...)
				conn.Close()
			}
		})
		p.Close()
	}
}

func printBench(out io.Writer, s style, rep benchReport) {
	us := func(d time.Duration) string {
		switch {
		case d >= 10*time.Millisecond:
			return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
		case d >= time.Millisecond:
			return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
		}
		return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 0, 64) + "µs"
	}
	rows := [][]cell{{plain("WORKLOAD"), plain("TARGET"), plain("OPS/S"), plain("P50"), plain("P99"), plain("ERRORS"), plain("OVERLAPS")}}
	prev := ""
	for _, r := range rep.Results {
		name := ""
		if r.Workload != prev {
			name = r.Workload + "  " + r.Title
			prev = r.Workload
		}
		overlaps := plain("-")
		if r.Target == "redlock" && strings.Contains(r.Title, "one key") {
			overlaps = cell{strconv.FormatInt(r.Overlaps, 10), s.green}
			if r.Overlaps > 0 {
				overlaps.paint = s.red
			}
		}
		rows = append(rows, []cell{plain(name), plain(r.Target), plain(strconv.FormatFloat(r.OpsPerSec, 'f', 0, 64)),
			plain(us(r.Cycle.P50)), plain(us(r.Cycle.P99)), plain(strconv.FormatInt(r.Errors, 10)), overlaps})
	}
	fmt.Fprintln(out)
	writeTable(out, "  ", rows)
	fmt.Fprintln(out, s.dim("  P50/P99: latency of one lock+hold+unlock cycle. floor: raw redigo, same commands, no lock logic."))
}
