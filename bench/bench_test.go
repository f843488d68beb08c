package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/schollz/progressbar/v3"
	"go.uber.org/goleak"

	"github.com/redlockplus/redlock/internal/benchkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestQuickRun runs the whole tool in quick mode on real redis-server
// nodes and checks its outputs: the table, results.json and the charts.
func TestQuickRun(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server not found; install it with: apt-get install -y redis-server")
	}
	out := t.TempDir()
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"-quick", "-out", out}, &stdout, io.Discard); err != nil {
		t.Fatalf("run: %v\n%s", err, stdout.String())
	}
	for _, want := range []string{"| W1-3 | redlock |", "| W1-3 | redlock-fenced |", "| W4 | floor |", "| W2 | ours-goredis |", "| W2 | ours-rueidis |",
		"Goals", "| W6 | locks lost redlock |", "ops/s ours-rueidis/redlock",
		"| W1-3 | rueidislock |", "| W3 | rueidislock-default |", "| W8 | redlock-7n |", "| W8 | floor-3n |",
		"| W1-3 | cycle p50 redlock/rueidislock |", "| W2 | ops/s redlock/rueidislock |", "| W3 | acquire wait p99 redlock/rueidislock |",
		"| W7 | heap per held lock redlock, bytes |", "| W7 | client CPU redlock, share of one core |", "| W7 | locks lost redlock |",
		"| W8 | cycle p50 redlock-7n/redlock-3n |", "| W9 | loss detected p99 redlock, ms |", "| rueidislock-default | 6 |",
		"| E1 | W2 client CPU per cycle redlock/rueidislock |", "| E3 | W2 client+nodes CPU per cycle redlock/redsync |",
		"| S2 | W7 node memory per held lock per node redlock, bytes |", "| D1 | W9 loss detected p99 redlock, ms |",
		"| W1-3 | redlock-cluster |", "| W2 | redlock-cluster-ack |", "| W2 | redlock-ack |",
		"| W2 | ops/s redlock-cluster/redlock |", "| W1-3 | cycle p50 redlock-cluster-ack/redlock-cluster |"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, stdout.String())
		}
	}

	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("results.json does not parse: %v", err)
	}
	seen := map[string]bool{}
	for _, w := range rep.Workloads {
		seen[w.Goal] = true
		if w.ID == "W7" {
			checkW7(t, w.Results)
		} else if len(w.Results) < 2 {
			t.Errorf("%s: %d results, want ours and others", w.ID, len(w.Results))
		}
		for _, res := range w.Results {
			if res.Ops == 0 {
				t.Errorf("%s %s: no operations (first error %q)", w.ID, res.Target, res.FirstError)
			}
			if res.Overlaps != 0 {
				t.Errorf("%s %s: %d overlaps", w.ID, res.Target, res.Overlaps)
			}
			if w.Kind == "allocs" && res.AllocsPerOp <= 0 {
				t.Errorf("%s %s: no allocations counted", w.ID, res.Target)
			}
			if w.Kind == "keep" && (res.Keep == nil || res.Keep.Acquired == 0 || res.Keep.Commands == 0 ||
				res.Keep.Processed == 0 || res.Keep.HeapBytesPerLock <= 0 || res.Keep.CPUFraction <= 0) {
				t.Errorf("%s %s: keep result %+v", w.ID, res.Target, res.Keep)
			}
			if w.Kind == "detect" && (res.Detect == nil || res.Detect.Samples == 0 || res.Errors != 0) {
				t.Errorf("%s %s: detect result %+v, errors %d (first %q)", w.ID, res.Target, res.Detect, res.Errors, res.FirstError)
			}
		}
	}
	for _, g := range []string{"W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9"} {
		if !seen[g] {
			t.Errorf("results.json lacks %s", g)
		}
	}
	if len(rep.Goals) < 10 || rep.Machine.CPUs == 0 || rep.Versions["github.com/go-redsync/redsync/v4"] == "" ||
		rep.Versions["github.com/redis/rueidis"] == "" {
		t.Errorf("goals %d, machine %+v, versions %v", len(rep.Goals), rep.Machine, rep.Versions)
	}
	if runtime.GOOS == "linux" && (rep.Machine.Memory == "unknown" || rep.Machine.Kernel == "unknown") {
		t.Errorf("machine %+v: memory or kernel not read from /proc", rep.Machine)
	}

	md, err := os.ReadFile(filepath.Join(out, "results.md"))
	if err != nil || !bytes.Contains(md, []byte("Machine: ")) || !bytes.Contains(md, []byte("| W2 | redsync |")) {
		t.Errorf("results.md: %v\n%s", err, md)
	}

	for _, name := range []string{"latency-w1-3.png", "latency-w3.png", "latency-w4.png", "throughput.png", "w5-allocs.png", "w6-keep.png",
		"w7-keep.png", "latency-w8.png", "latency-w9.png", "goals-round2.png"} {
		b, err := os.ReadFile(filepath.Join(out, "charts", name))
		if err != nil {
			t.Error(err)
			continue
		}
		if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 5000 {
			t.Errorf("%s is not a rendered PNG (%d bytes)", name, len(b))
		}
	}
}

// checkW7 checks that W7 ran redlock with and without loss detection, and
// that only loss detection made the nodes track keys: about one per held
// lock.
func checkW7(t *testing.T, results []benchkit.Result) {
	t.Helper()
	var names []string
	for _, res := range results {
		names = append(names, res.Target)
		k := res.Keep
		if k == nil || k.NodeBytesPerLock <= 0 {
			t.Errorf("W7 %s: keep result %+v, want node memory measured", res.Target, k)
			continue
		}
		perKey := res.Target == "redlock"
		if tracked := k.TrackedKeysPerNode; perKey && tracked < float64(k.Acquired) || !perKey && tracked != 0 {
			t.Errorf("W7 %s: %.0f keys tracked per node for %d locks", res.Target, tracked, k.Acquired)
		}
	}
	if want := []string{"redlock", "redlock-untracked"}; !slices.Equal(names, want) {
		t.Errorf("W7: targets %q, want %q", names, want)
	}
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    []string // workload ids
		wantErr bool
	}{
		{args: []string{"-quick"}, want: []string{"W1-3", "W1-5", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9"}},
		{args: []string{"-workloads", "W9,W8"}, want: []string{"W9", "W8"}},
		{args: []string{"-workloads", "W1,w3"}, want: []string{"W1-3", "W1-5", "W3"}},
		{args: []string{"-workloads", "W1-5"}, want: []string{"W1-5"}},
		{args: []string{"-workloads", "W10"}, wantErr: true},
		{args: []string{"-rounds", "-1"}, wantErr: true},
		{args: []string{"extra"}, wantErr: true},
		{args: []string{"-workloads", "W7", "-w7-locks", "1000000"}, want: []string{"W7"}},
		{args: []string{"-w7-locks", "-5"}, wantErr: true},
		{args: []string{"-w7-locks", "10000,x"}, wantErr: true},
		{args: []string{"-workloads", "W6,W7", "-w7-locks", "1000000,10000"}, want: []string{"W6", "W7-1000000", "W7-10000"}},
		{args: []string{"-memprofile", "x", "-profile-after", "-1s"}, wantErr: true},
		{args: []string{"-cpuprofile", "x", "-profile-for", "-1s"}, wantErr: true},
	} {
		cfg, err := parseFlags(tc.args, io.Discard)
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: error %v, want error %v", tc.args, err, tc.wantErr)
			continue
		}
		var got []string
		for _, w := range cfg.workloads {
			got = append(got, w.ID)
		}
		if !tc.wantErr && strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%q: workloads %v, want %v", tc.args, got, tc.want)
		}
		if slices.Contains(tc.args, "-w7-locks") && !tc.wantErr {
			w7 := cfg.workloads[len(cfg.workloads)-len(strings.Split(tc.args[len(tc.args)-1], ","))]
			if w7.Locks != 1000000 || !strings.HasPrefix(w7.Title, "1000000 locks") || w7.Goal() != "W7" {
				t.Errorf("%q: W7 %+v, want 1,000,000 locks", tc.args, w7)
			}
		}
	}
}

func TestSelectTargets(t *testing.T) {
	all := targets()
	for _, tc := range []struct {
		args    []string
		want    string // target names, in table order
		wantErr bool
	}{
		{args: nil, want: "all"},
		{args: []string{"-targets", "redsync, redlock"}, want: "redlock,redsync"},
		{args: []string{"-targets", "redlock,nope"}, wantErr: true},
	} {
		cfg, err := parseFlags(tc.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		got, err := selectTargets(all, cfg.targets)
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: error %v, want error %v", tc.args, err, tc.wantErr)
			continue
		}
		var names []string
		for _, x := range got {
			names = append(names, x.name)
		}
		if tc.want == "all" {
			if len(got) != len(all) {
				t.Errorf("%q: %d targets, want all %d", tc.args, len(got), len(all))
			}
		} else if !tc.wantErr && strings.Join(names, ",") != tc.want {
			t.Errorf("%q: targets %v, want %s", tc.args, names, tc.want)
		}
	}
}

// TestOwnServerTargets runs the targets that start servers of their own (a
// Redis Cluster without and with replicas, nodes with replicas) on a short
// W1-3 beside redlock on the tool's nodes, through runWorkload: each runs
// without errors, the node figures of its rows are its servers' (the
// tool's nodes see none of its commands), the report shows it and its
// ratios, and Close stops its servers.
func TestOwnServerTargets(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server not found; install it with: apt-get install -y redis-server")
	}
	ctx := context.Background()
	nodes, err := startNodes(ctx, "redis-server", 3)
	if err != nil {
		t.Fatal(err)
	}
	defer stopNodes(nodes)
	var mu sync.Mutex
	var made []*ownTarget
	ts := []target{targets()[0]}
	if ts[0].name != "redlock" {
		t.Fatalf("the first target is %s", ts[0].name)
	}
	for _, o := range ownServerTargets() {
		start := o.start
		o.start = func(ctx context.Context, bin string, w benchkit.Workload) (benchkit.Target, error) {
			tg, err := start(ctx, bin, w)
			if err == nil {
				mu.Lock()
				made = append(made, tg.(*ownTarget))
				mu.Unlock()
			}
			return tg, err
		}
		ts = append(ts, o)
	}
	// startOwn waits longer for the servers it starts than the restart
	// guard needs the tool's nodes, started before, to be up.
	w := benchkit.Standard(true)[0]
	if w.ID != "W1-3" {
		t.Fatalf("the first workload is %s", w.ID)
	}
	e := env{addrs: addrsOf(nodes), rounds: 1, targets: ts, redisBin: "redis-server",
		bar: progressbar.NewOptions(len(ts), progressbar.OptionSetWriter(io.Discard))}
	results, rounds, err := e.runWorkload(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range results {
		if res.Ops == 0 || res.Errors != 0 {
			t.Errorf("%s: %d cycles, %d errors (first %q)", res.Target, res.Ops, res.Errors, res.FirstError)
		}
		// A cycle is a command on each of 3 nodes and another to release:
		// as many reads and writes each, at the least.
		if res.ServerEvents < 4*res.Ops || res.ServerCPUSeconds <= 0 {
			t.Errorf("%s: %d node reads+writes and %.4f node CPU s for %d cycles: not its nodes' figures",
				res.Target, res.ServerEvents, res.ServerCPUSeconds, res.Ops)
		}
	}
	if len(made) != 3 {
		t.Fatalf("%d targets of their own servers made, want 3", len(made))
	}
	for _, o := range made {
		want := map[string]int{"redlock-cluster": 3, "redlock-cluster-ack": 6, "redlock-ack": 6}[o.Name()]
		if len(o.servers) != want {
			t.Errorf("%s: %d servers, want %d", o.Name(), len(o.servers), want)
		}
		for _, s := range o.servers {
			select {
			case <-s.exited:
			default:
				t.Errorf("server %s still runs after Close", s.addr)
			}
			if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
				t.Errorf("server %s: directory %s left: %v", s.addr, s.dir, err)
			}
		}
	}

	rep := &report{}
	rep.add(w, results, rounds)
	rep.Ratios = rep.clusterRatios()
	var out bytes.Buffer
	rep.printTables(&out)
	for _, want := range []string{"| W1-3 | redlock-cluster |", "| W1-3 | redlock-cluster-ack |", "| W1-3 | redlock-ack |",
		"| W1-3 | cycle p50 redlock-cluster/redlock |", "| W1-3 | client CPU per cycle redlock-cluster-ack/redlock-cluster |",
		"| W1-3 | client+nodes CPU per cycle redlock-ack/redlock |", "redlock-cluster-ack: servers and node reads+writes are those of"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
