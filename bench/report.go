package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/redlockplus/redlock/internal/benchkit"
)

// report is everything a run measured; it is written as results.json.
type report struct {
	Args            []string          `json:"args"`
	Quick           bool              `json:"quick"`
	Rounds          int               `json:"rounds"`
	Started         time.Time         `json:"started"`
	DurationSeconds float64           `json:"duration_seconds"`
	Machine         machine           `json:"machine"`
	Versions        map[string]string `json:"versions"`
	SlowNodeRTT     string            `json:"slow_node_rtt"`
	Workloads       []workloadReport  `json:"workloads"`
	Goals           []check           `json:"goals"`
	Ratios          []infoRatio       `json:"ratios,omitempty"`
	Notes           []string          `json:"notes,omitempty"`
}

// workloadReport holds one workload's results, one per target.
type workloadReport struct {
	ID      string            `json:"id"`
	Goal    string            `json:"goal"`
	Title   string            `json:"title"`
	Nodes   int               `json:"nodes"`
	Kind    string            `json:"kind"`
	Results []benchkit.Result `json:"results"`
	// rounds holds each target's rounds, by target name, for the median
	// ratios of the goals of issue 15.
	rounds map[string][]benchkit.Result
}

// check is one goal of the issue evaluated on this run.
type check struct {
	Goal   string  `json:"goal"`   // workload id
	Metric string  `json:"metric"` // what is compared
	Value  float64 `json:"value"`
	Cmp    string  `json:"cmp"` // "<=", ">=" or "=="
	Limit  float64 `json:"limit"`
	Pass   bool    `json:"pass"`
	Detail string  `json:"detail"` // the two figures behind a ratio
}

func newReport(cfg config, e env) *report {
	r := &report{Args: cfg.args, Quick: cfg.quick, Rounds: cfg.rounds, SlowNodeRTT: slowRTT.String()}
	if _, ok := plainPoolOptions(); !ok {
		r.Notes = append(r.Notes, "redlock-plain (WithPipelining(false)) not measured: the option is not in this build of the library")
	}
	if cfg.quick {
		r.Notes = append(r.Notes, "quick mode: short runs, ratios are only indicative")
	}
	return r
}

// add records the merged results of w and its rounds (rounds[i] are the
// rounds of results[i]).
func (r *report) add(w benchkit.Workload, results []benchkit.Result, rounds [][]benchkit.Result) {
	kind := map[benchkit.Kind]string{benchkit.Cycle: "cycle", benchkit.Allocs: "allocs", benchkit.Keep: "keep",
		benchkit.Detect: "detect"}[w.Kind]
	byTarget := map[string][]benchkit.Result{}
	for i, res := range results {
		if i < len(rounds) {
			byTarget[res.Target] = rounds[i]
		}
	}
	r.Workloads = append(r.Workloads, workloadReport{ID: w.ID, Goal: w.Goal(), Title: w.Title,
		Nodes: w.NodeCount, Kind: kind, Results: results, rounds: byTarget})
}

// finish stamps the run and evaluates the goals.
func (r *report) finish(started time.Time, redisBin string) {
	r.Started = started.UTC().Truncate(time.Second)
	r.DurationSeconds = math.Round(time.Since(started).Seconds())
	r.Machine = describeMachine(redisBin)
	r.Versions = versions()
	r.Goals = r.evaluate()
	r.Ratios = r.clusterRatios()
}

// result returns the result of target on workload id, if measured.
func (r *report) result(id, target string) (benchkit.Result, bool) {
	for _, w := range r.Workloads {
		if w.ID != id {
			continue
		}
		for _, res := range w.Results {
			if res.Target == target {
				return res, true
			}
		}
	}
	return benchkit.Result{}, false
}

// evaluate checks the goals of issue 5 against the default redlock and the
// default redsync (and the floor where the goal names it), those of issue
// 14 (the go-redis and rueidis targets against the default redlock) and
// those of issue 15 (round2Goals). A goal whose figures were not measured
// is left out.
func (r *report) evaluate() []check {
	var cs []check
	ratio := func(goal, metric, cmp string, limit float64, a, b float64, unit func(float64) string) {
		if b == 0 {
			return
		}
		v := a / b
		pass := v <= limit
		if cmp == ">=" {
			pass = v >= limit
		}
		cs = append(cs, check{Goal: goal, Metric: metric, Value: v, Cmp: cmp, Limit: limit, Pass: pass,
			Detail: unit(a) + " vs " + unit(b)})
	}
	ms := func(v float64) string { return fmtMs(time.Duration(v)) }
	rate := func(v float64) string { return fmt.Sprintf("%.0f/s", v) }
	count := func(v float64) string { return fmt.Sprintf("%.1f", v) }
	get := func(id, t string) (benchkit.Result, bool) { return r.result(id, t) }

	for _, id := range []string{"W1-3", "W1-5"} {
		ours, ok := get(id, "redlock")
		if !ok {
			continue
		}
		if rs, ok := get(id, "redsync"); ok {
			ratio(id, "cycle p50 redlock/redsync", "<=", 0.8, float64(ours.Cycle.P50), float64(rs.Cycle.P50), ms)
		}
		if fl, ok := get(id, "floor"); ok {
			ratio(id, "cycle p50 redlock/floor", "<=", 1.3, float64(ours.Cycle.P50), float64(fl.Cycle.P50), ms)
		}
		if fe, ok := get(id, "redlock-fenced"); ok {
			ratio(id, "cycle p50 redlock-fenced/redlock", "<=", 1.6, float64(fe.Cycle.P50), float64(ours.Cycle.P50), ms)
		}
	}
	if ours, ok := get("W2", "redlock"); ok {
		if rs, ok := get("W2", "redsync"); ok {
			ratio("W2", "ops/s redlock/redsync", ">=", 3, ours.OpsPerSec, rs.OpsPerSec, rate)
		}
	}
	if ours, ok := get("W3", "redlock"); ok {
		if rs, ok := get("W3", "redsync"); ok {
			ratio("W3", "acquisitions/s redlock/redsync", ">=", 1.8, ours.OpsPerSec, rs.OpsPerSec, rate)
			ratio("W3", "acquire wait p99 redlock/redsync", "<=", 0.1, float64(ours.Acquire.P99), float64(rs.Acquire.P99), ms)
		}
		for _, w := range r.Workloads {
			if w.ID != "W3" {
				continue
			}
			for _, res := range w.Results {
				cs = append(cs, check{Goal: "W3", Metric: "overlaps " + res.Target, Value: float64(res.Overlaps),
					Cmp: "==", Limit: 0, Pass: res.Overlaps == 0, Detail: fmt.Sprintf("%d acquisitions", res.Ops)})
			}
		}
	}
	if ours, ok := get("W4", "redlock"); ok {
		if fl, ok := get("W4", "floor"); ok {
			ratio("W4", "acquire p50 redlock/floor", "<=", 1.5, float64(ours.Acquire.P50), float64(fl.Acquire.P50), ms)
		}
		if rs, ok := get("W4", "redsync"); ok {
			ratio("W4", "acquire p50 redlock/redsync", "<=", 0.05, float64(ours.Acquire.P50), float64(rs.Acquire.P50), ms)
		}
	}
	if ours, ok := get("W5", "redlock"); ok {
		if rs, ok := get("W5", "redsync"); ok {
			ratio("W5", "allocs/op redlock/redsync", "<=", 0.5, ours.AllocsPerOp, rs.AllocsPerOp, count)
			ratio("W5", "B/op redlock/redsync", "<=", 0.5, ours.BytesPerOp, rs.BytesPerOp, count)
		}
	}
	for _, a := range []string{"ours-goredis", "ours-rueidis"} {
		// Issue 14: the locks over other clients, against the redigo path.
		for _, id := range []string{"W1-3", "W1-5"} {
			if ad, ok := get(id, a); ok {
				if ours, ok := get(id, "redlock"); ok {
					ratio(id, "cycle p50 "+a+"/redlock", "<=", 1.3, float64(ad.Cycle.P50), float64(ours.Cycle.P50), ms)
				}
			}
		}
		if ad, ok := get("W2", a); ok {
			if ours, ok := get("W2", "redlock"); ok {
				ratio("W2", "ops/s "+a+"/redlock", ">=", 0.8, ad.OpsPerSec, ours.OpsPerSec, rate)
			}
		}
	}
	if ours, ok := get("W6", "redlock"); ok && ours.Keep != nil {
		k := ours.Keep
		cs = append(cs, check{Goal: "W6", Metric: "locks lost redlock", Value: float64(k.Lost), Cmp: "==", Limit: 0,
			Pass:   k.Lost == 0 && k.Acquired == k.Locks,
			Detail: fmt.Sprintf("%d of %d acquired; %.2f CPU s, %.0f commands/s", k.Acquired, k.Locks, k.CPUSeconds, k.CommandsPerSec)})
	}
	cs = append(cs, r.round2Goals()...)
	return append(cs, r.round3Goals()...)
}

// writeJSON writes the report to path.
func (r *report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// fmtMs formats a duration in milliseconds with three significant digits.
func fmtMs(d time.Duration) string {
	ms := float64(d) / 1e6
	switch {
	case ms == 0:
		return "0"
	case ms < 1:
		return fmt.Sprintf("%.3f", ms)
	case ms < 10:
		return fmt.Sprintf("%.2f", ms)
	case ms < 100:
		return fmt.Sprintf("%.1f", ms)
	}
	return fmt.Sprintf("%.0f", ms)
}

// printTables writes the results and the goals as Markdown tables.
func (r *report) printTables(w io.Writer) {
	fmt.Fprintf(w, "\nLatencies in ms. cycle = lock + hold + unlock; acquire = from asking until held (retries included).\n\n")
	fmt.Fprintln(w, "| workload | target | ops/s | cycle p50 | p90 | p99 | max | acquire p50 | acquire p99 | errors | overlaps | allocs/op | B/op |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, wl := range r.Workloads {
		if wl.Kind == "keep" || wl.Kind == "detect" {
			continue
		}
		for _, res := range wl.Results {
			allocs, bytes := "", ""
			if res.AllocsPerOp > 0 {
				allocs, bytes = fmt.Sprintf("%.1f", res.AllocsPerOp), fmt.Sprintf("%.0f", res.BytesPerOp)
			}
			acqP50, acqP99 := "", ""
			if res.Acquire.N > 0 {
				acqP50, acqP99 = fmtMs(res.Acquire.P50), fmtMs(res.Acquire.P99)
			}
			fmt.Fprintf(w, "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %d | %d | %s | %s |\n",
				wl.ID, res.Target, res.OpsPerSec, fmtMs(res.Cycle.P50), fmtMs(res.Cycle.P90), fmtMs(res.Cycle.P99),
				fmtMs(res.Cycle.Max), acqP50, acqP99, res.Errors, res.Overlaps, allocs, bytes)
		}
	}
	r.printCPU(w)
	keepCols := []string{"locks", "acquired", "lost", "acquire p50", "hold s", "client CPU s", "CPU % of a core", "steady CPU %", "heap B/lock",
		"node B/lock", "tracked keys/node", "server CPU s", "commands/s", "processed/s", "scripts/s", "goroutines", "alloc MB/s", "GCs (steady)", "GC CPU s"}
	r.printKindTables(w, "keep", keepCols, func(res benchkit.Result) (string, bool) {
		k := res.Keep
		if k == nil {
			return "", false
		}
		return fmt.Sprintf("%d | %d | %d | %s | %.1f | %.2f | %.2f | %.2f | %.0f | %.0f | %.0f | %.2f | %.0f | %.0f | %.0f | %d | %.2f | %d (%.2f) | %.3f",
			k.Locks, k.Acquired, k.Lost, fmtMs(res.Acquire.P50), k.Hold.Seconds(),
			k.CPUSeconds, 100*k.CPUFraction, 100*k.SteadyCPUFraction, k.HeapBytesPerLock, k.NodeBytesPerLock, k.TrackedKeysPerNode, k.ServerCPUSeconds, k.CommandsPerSec,
			k.ProcessedPerSec, k.ScriptsPerSec, k.Goroutines, k.AllocBytesPerSec/1e6, k.GCCycles, k.SteadyGCs, k.GCCycleCPUSeconds), true
	}, func(wl workloadReport) {
		fmt.Fprintln(w, "\ncommands/s: what the nodes ran during the hold, the commands inside scripts included (INFO commandstats);")
		fmt.Fprintln(w, "processed/s: the same from INFO stats total_commands_processed, the tool's INFO calls left out;")
		fmt.Fprintln(w, "scripts/s: the EVAL/EVALSHA calls among them. CPU % of a core: client CPU s (getrusage) per second of hold;")
		fmt.Fprintln(w, "heap B/lock: live heap after a forced GC at the end of the hold, less a baseline taken before the lock handles were made, per lock held;")
		fmt.Fprintln(w, "node B/lock: the growth of used_memory (INFO memory) from before the locks were taken to the end of the hold, per node and lock held;")
		fmt.Fprintln(w, "tracked keys/node: the growth of tracking_total_keys (INFO stats) over the same span, the loss detector's records of keys;")
		fmt.Fprintln(w, "alloc MB/s: what the client allocated per second of hold (runtime/metrics); GCs: the collections that ran in the hold, each a marking of every held lock,")
		fmt.Fprintln(w, "and in parentheses those a hold this long brings in the steady state (alloc MB/s x hold / (live heap x GOGC/100)); the hold starts after a forced collection,")
		fmt.Fprintln(w, "whose CPU is GC CPU s; steady CPU %: client CPU s with the hold's collections replaced by the steady ones at GC CPU s each, per second of hold (S1 and S3 use it).")
		if slices.ContainsFunc(wl.Results, func(res benchkit.Result) bool { return strings.HasPrefix(res.Target, "redsync") }) {
			fmt.Fprintln(w, "redsync keeps its locks with a user loop: one goroutine per lock, Extend every TTL/2, lost when its validity passes without a successful Extend.")
		}
	})
	r.printDetect(w)
	fmt.Fprintln(w, "\nGoals (redlock and redsync with default options; ours-goredis and ours-rueidis against redlock;")
	fmt.Fprintln(w, "redlock against rueidislock with KeyMajority 1, ratios the median of the rounds' ratios):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| goal | metric | measured | goal | result |")
	fmt.Fprintln(w, "|---|---|--:|--:|---|")
	for _, c := range r.Goals {
		fmt.Fprintf(w, "| %s | %s | %s (%s) | %s %s | %s |\n", c.Goal, c.Metric, fmtNum(c.Value), c.Detail,
			c.Cmp, fmtNum(c.Limit), verdict(c))
	}
	r.printRatios(w)
	for _, res := range r.allResults() {
		if res.FirstError != "" {
			fmt.Fprintf(w, "\n%s %s: first error: %s", res.Workload, res.Target, oneLine(res.FirstError))
		}
		if res.Keep != nil && res.Keep.FirstLoss != "" {
			fmt.Fprintf(w, "\n%s %s: first lock lost: %s", res.Workload, res.Target, oneLine(res.Keep.FirstLoss))
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "\nnote: %s", n)
	}
	fmt.Fprintln(w)
}

// verdict is PASS, or FAIL with how far the value is from the goal.
func verdict(c check) string {
	if c.Pass {
		return "PASS"
	}
	switch {
	case c.Cmp == "<=" && c.Limit > 0:
		return fmt.Sprintf("FAIL (%.2fx the limit)", c.Value/c.Limit)
	case c.Cmp == ">=" && c.Value > 0:
		return fmt.Sprintf("FAIL (needs %.2fx more)", c.Limit/c.Value)
	}
	return "FAIL"
}

func fmtNum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e6 {
		return fmt.Sprintf("%.0f", v)
	}
	if math.Abs(v) < 0.1 {
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", "; ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

func (r *report) allResults() []benchkit.Result {
	var out []benchkit.Result
	for _, w := range r.Workloads {
		out = append(out, w.Results...)
	}
	return out
}

// printKindTables writes, for each workload of kind, its title and a
// Markdown table with a column for the target, one right-aligned column
// for each of cols and one for the errors. cells formats the cells of cols
// for one result, joined by " | ", and reports false for a result without
// the kind's data, whose row is then blank but for the target and the
// errors. notes writes what follows a workload's table.
func (r *report) printKindTables(w io.Writer, kind string, cols []string, cells func(benchkit.Result) (string, bool), notes func(workloadReport)) {
	for _, wl := range r.Workloads {
		if wl.Kind != kind {
			continue
		}
		fmt.Fprintf(w, "\n%s: %s\n\n", wl.ID, wl.Title)
		fmt.Fprintf(w, "| target | %s | errors |\n", strings.Join(cols, " | "))
		fmt.Fprintf(w, "|---|%s\n", strings.Repeat("--:|", len(cols)+1))
		for _, res := range wl.Results {
			if c, ok := cells(res); ok {
				fmt.Fprintf(w, "| %s | %s | %d |\n", res.Target, c, res.Errors)
			} else {
				fmt.Fprintf(w, "| %s |%s %d |\n", res.Target, strings.Repeat(" |", len(cols)), res.Errors)
			}
		}
		notes(wl)
	}
}

// writeMarkdown writes the tables with the machine, the versions and the
// command line, ready to paste into BENCHMARKS.md.
func (r *report) writeMarkdown(path string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Run of %s, %.0f s, %d interleaved round(s) per workload; slow node: +%s per round trip.\n\n",
		r.Started.Format(time.RFC3339), r.DurationSeconds, r.Rounds, r.SlowNodeRTT)
	fmt.Fprintf(&b, "Command: `%s`\n\n", strings.TrimSpace("go run -C bench . "+strings.Join(r.Args, " ")))
	fmt.Fprintf(&b, "Machine: %d CPUs, %s, %s memory, %s (kernel %s); %s; %s; load average at the end: %s\n\n",
		r.Machine.CPUs, r.Machine.CPUModel, r.Machine.Memory, r.Machine.OS, r.Machine.Kernel, r.Machine.Go, r.Machine.Redis, r.Machine.LoadAvg)
	keys := make([]string, 0, len(r.Versions))
	for k := range r.Versions {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b.WriteString("Versions:\n\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "- %s %s\n", k, r.Versions[k])
	}
	r.printTables(&b)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// printCPU writes the CPU time per operation of the cycle workloads: the
// client's and the nodes' (all the workload's nodes, whichever the target
// uses). Where both share the machine's cores, their sum bounds the
// throughput.
func (r *report) printCPU(w io.Writer) {
	header := false
	for _, wl := range r.Workloads {
		for _, res := range wl.Results {
			if res.Ops == 0 || res.ClientCPUSeconds <= 0 {
				continue
			}
			if !header {
				fmt.Fprintln(w, "\nCPU per cycle in µs: the process (getrusage) and the workload's nodes (INFO cpu, summed); the process's")
				fmt.Fprintln(w, "read and write system calls per cycle (/proc/self/io), and the nodes' (INFO stats total_reads_processed + total_writes_processed).")
				fmt.Fprintln(w)
				fmt.Fprintln(w, "| workload | target | client | servers | total | client syscalls | node reads+writes |")
				fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|")
				header = true
			}
			ops := float64(res.Ops)
			c, s := perCycleMicros(res.ClientCPUSeconds, res), perCycleMicros(res.ServerCPUSeconds, res)
			fmt.Fprintf(w, "| %s | %s | %.1f | %.1f | %.1f | %.2f | %.2f |\n", wl.ID, res.Target, c, s, c+s,
				float64(res.ClientSyscalls)/ops, float64(res.ServerEvents)/ops)
		}
	}
	r.printOwnServers(w)
}
