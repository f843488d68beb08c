package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockplus/redlock"
	"github.com/spf13/cobra"
)

// Demo timings. The whole demo takes about 8 s.
const (
	demoTTL        = 800 * time.Millisecond
	demoRetryDelay = 50 * time.Millisecond
	demoTurnsPhase = 2 * time.Second
	demoLongJob    = 3 * demoTTL // phase 2: three times the TTL
	demoKillJob    = 2 * demoTTL // phase 3
	demoKillAfter  = 300 * time.Millisecond
	demoAfterKill  = time.Second
	demoShownTurns = 6
	demoDeadline   = 14 * time.Second
)

// errNodeCut is what a cut node's pool returns.
var errNodeCut = errors.New("node cut off by the demo")

// cuttablePool is a node pool the demo can cut off, to stand for a dead
// node when the nodes are real servers it must not kill.
type cuttablePool struct {
	*redis.Pool
	addr string
	cut  *atomic.Bool // shared by every pool of the node
}

func (p *cuttablePool) GetContext(ctx context.Context) (redis.Conn, error) {
	if p.cut.Load() {
		return nil, errNodeCut
	}
	return p.Pool.GetContext(ctx)
}

// Addr names the node in errors.
func (p *cuttablePool) Addr() string { return p.addr }

// demoWorker is one client: its own pools and factory.
type demoWorker struct {
	id    int
	f     *redlock.Factory
	pools []*cuttablePool
	paint func(string) string
}

// turnRecord is one holding of the lock, on the demo's clock.
type turnRecord struct {
	worker     int
	start, end time.Duration
	lost       error
}

type demo struct {
	out     io.Writer
	s       style
	t0      time.Time
	name    string
	urls    []string
	addrs   []string
	quorum  int
	emb     *embedded // nil when the nodes are configured ones
	cut     []*atomic.Bool
	workers []*demoWorker
	watcher *demoWorker
	metrics *metrics // --metrics-addr; nil without

	counter atomic.Int64 // the shared resource: read, worked on, written back

	mu    sync.Mutex // guards what follows and serialises output
	turns []turnRecord
	shown int // detailed turn lines left to print
}

func newDemoCmd() *cobra.Command {
	var workers int
	var metricsAddr string
	var nf *nodeFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "A guided tour: workers contend for a lock on embedded nodes",
		Long: `Start 3 embedded Redis nodes (or use --nodes / REDLOCK_NODES) and let
several workers contend for one lock to increment a shared counter. The demo
shows who holds the lock, the autoextender keeping a long job's lock alive,
a node dying while the lock is held, and finally checks that no two
holdings overlapped and no increment was lost. It takes about 8 seconds.

On configured nodes the demo uses a lock name of its own and does not kill
a real server: it cuts one node off from its own connections instead.`,
		Args:              exactArgs(0, "no arguments"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if workers < 2 || workers > 8 {
				return usageErr("--workers %d: choose 2 to 8", workers)
			}
			urls, _, err := nf.urls()
			if err != nil {
				return err
			}
			d := &demo{out: cmd.OutOrStdout(), s: newStyle(cmd.OutOrStdout()), name: "demo:counter"}
			if urls == nil {
				e, err := startEmbedded(3, 0)
				if err != nil {
					return err
				}
				defer e.close()
				d.emb, urls = e, e.urls()
			} else {
				d.name = "redlock-demo:" + randomHex(4)
			}
			m, err := startMetrics(metricsAddr)
			if err != nil {
				return err
			}
			defer m.close()
			d.metrics = m
			ctx, cancel := context.WithTimeout(cmd.Context(), demoDeadline)
			defer cancel()
			return d.run(ctx, urls, workers)
		},
	}
	nf = addIndependentNodeFlags(cmd)
	cmd.Flags().IntVar(&workers, "workers", 4, "number of workers (2-8)")
	addMetricsFlag(cmd, &metricsAddr)
	return cmd
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newWorker builds a client with its own pools over every node.
func (d *demo) newWorker(id int) (*demoWorker, error) {
	w := &demoWorker{id: id}
	pools := make([]redlock.Pool, len(d.urls))
	for i, u := range d.urls {
		p, err := redlock.NewPool(u)
		if err != nil {
			w.close()
			return nil, classify(err)
		}
		cp := &cuttablePool{Pool: p, addr: d.addrs[i], cut: d.cut[i]}
		w.pools = append(w.pools, cp)
		pools[i] = cp
	}
	opts := append([]redlock.Option{redlock.WithTTL(demoTTL), redlock.WithRetryDelay(demoRetryDelay)}, d.metrics.options()...)
	if d.emb == nil {
		// A configured node is cut off, not killed: every command must
		// borrow a connection from the cuttable pool, so no pipelined
		// connection may outlive the cut.
		opts = append(opts, redlock.WithPipelining(false))
	}
	f, err := redlock.NewFactory(pools, opts...)
	if err != nil {
		w.close()
		return nil, classify(err)
	}
	w.f = f
	colours := []func(string) string{d.s.cyan, d.s.yellow, d.s.blue, d.s.green}
	w.paint = colours[(id+len(colours)-1)%len(colours)]
	return w, nil
}

func (w *demoWorker) close() {
	if w.f != nil {
		_ = w.f.Close()
	}
	for _, p := range w.pools {
		_ = p.Pool.Close()
	}
}

func (w *demoWorker) label() string { return w.paint(fmt.Sprintf("worker %d", w.id)) }

// at formats the time since the demo started.
func (d *demo) at() string { return d.stamp(time.Since(d.t0)) }

func (d *demo) stamp(t time.Duration) string {
	return d.s.dim(fmt.Sprintf("%7s", fmt.Sprintf("+%.2fs", t.Seconds())))
}

func (d *demo) println(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, format+"\n", args...)
}

func (d *demo) heading(n int, title string, lines ...string) {
	d.println("\n%s %s", d.s.bold(fmt.Sprintf("%d ·", n)), d.s.bold(title))
	for _, l := range lines {
		d.println("  %s", d.s.dim(l))
	}
	d.println("")
}

func (d *demo) run(ctx context.Context, urls []string, nWorkers int) error {
	d.urls = urls
	for _, u := range urls {
		d.addrs = append(d.addrs, hostOf(u))
		d.cut = append(d.cut, new(atomic.Bool))
	}
	if len(urls) < 3 {
		return exitCode(exitUsage, &redlock.InsufficientNodesError{NodeCount: len(urls)})
	}
	d.quorum = len(urls)/2 + 1
	c, err := openCluster(ctx, nodeList{urls: urls}, redlock.WithTTL(demoTTL))
	if err != nil {
		return err
	}
	_, err = c.requireQuorum(ctx, len(urls)) // the demo kills one: it wants all
	c.close()
	if err != nil {
		return err
	}
	for i := 1; i <= nWorkers; i++ {
		w, err := d.newWorker(i)
		if err != nil {
			return err
		}
		defer w.close()
		d.workers = append(d.workers, w)
	}
	if d.watcher, err = d.newWorker(0); err != nil {
		return err
	}
	defer d.watcher.close()

	where := "embedded, in this process"
	if d.emb == nil {
		where = "configured nodes"
	}
	d.println("%s %d workers share a counter under one lock on %d Redis nodes",
		d.s.bold("redlock demo:"), nWorkers, len(urls))
	d.println("  %s  %s  %s", d.s.dim("nodes"), strings.Join(d.addrs, "  "), d.s.dim("("+where+")"))
	d.println("  %s   %q, ttl %v, quorum %d of %d", d.s.dim("lock"), d.name, demoTTL, d.quorum, len(urls))
	if d.metrics != nil {
		d.println("  %s  http://%s/metrics", d.s.dim("metrics"), d.metrics.addr())
	}
	d.t0 = time.Now()

	if err := d.phaseTurns(ctx); err != nil {
		return err
	}
	if err := d.phaseLongJob(ctx); err != nil {
		return err
	}
	if err := d.phaseNodeDies(ctx); err != nil {
		return err
	}
	return d.verify()
}

// loop makes w take turns until ctx ends.
func (d *demo) loop(ctx context.Context, w *demoWorker) {
	for ctx.Err() == nil {
		l := w.f.NewLock(d.name)
		validity, err := l.Acquire(ctx)
		if err != nil {
			if ctx.Err() == nil {
				time.Sleep(demoRetryDelay) // e.g. no quorum; try again
			}
			continue
		}
		d.turn(w, l, validity, time.Duration(20+mrand.IntN(41))*time.Millisecond)
		// other work between turns, so that the waiting workers get in
		select {
		case <-time.After(time.Duration(15+mrand.IntN(31)) * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// turn is one holding: read the counter, work, write it back, release.
func (d *demo) turn(w *demoWorker, l *redlock.Lock, validity, work time.Duration) turnRecord {
	start := time.Since(d.t0)
	v := d.counter.Load()
	time.Sleep(work)
	d.counter.Store(v + 1)
	end := time.Since(d.t0)
	rec := turnRecord{worker: w.id, start: start, end: end, lost: l.Err()}
	_ = l.Release(context.Background()) // see runCmd.release
	d.mu.Lock()
	d.turns = append(d.turns, rec)
	show := d.shown > 0
	if show {
		d.shown--
		fmt.Fprintf(d.out, "  %s  %s %s  holds the lock: counter %d → %d  %s\n", d.stamp(start),
			w.label(), d.s.green("●"), v, v+1, d.s.dim(fmt.Sprintf("(valid %v, token %s)", validity.Round(time.Millisecond), shortToken(l.Token()))))
	}
	d.mu.Unlock()
	return rec
}

// background runs loop for the given workers until the returned stop is
// called; stop waits for them.
func (d *demo) background(ctx context.Context, ws []*demoWorker) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.loop(ctx, w)
		}()
	}
	return func() { cancel(); wg.Wait() }
}

func (d *demo) turnsSince(from int) (int, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	per := map[int]int{}
	for _, t := range d.turns[from:] {
		per[t.worker]++
	}
	var parts []string
	for _, w := range d.workers {
		parts = append(parts, fmt.Sprintf("%d", per[w.id]))
	}
	return len(d.turns) - from, strings.Join(parts, "/")
}

func (d *demo) turnCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.turns)
}

func (d *demo) phaseTurns(ctx context.Context) error {
	d.heading(1, "Taking turns",
		"Each worker loops: acquire the lock, read the counter, work 20-60 ms,",
		"write the counter back +1, release. Overlapping turns would lose updates.")
	d.mu.Lock()
	d.shown = demoShownTurns
	d.mu.Unlock()
	stop := d.background(ctx, d.workers)
	select {
	case <-time.After(demoTurnsPhase):
	case <-ctx.Done():
	}
	stop()
	d.mu.Lock()
	d.shown = 0
	d.mu.Unlock()
	n, per := d.turnsSince(0)
	d.println("  %s  … %d turns in %v (per worker: %s), one holder at a time", d.at(), n, demoTurnsPhase, per)
	return ctx.Err()
}

// longJob has w acquire the lock while the others keep trying, hold it for
// job (calling during once it is held), and release it. It reports the
// extensions the watcher sees.
func (d *demo) longJob(ctx context.Context, w *demoWorker, job time.Duration, during func()) error {
	var others []*demoWorker
	for _, o := range d.workers {
		if o != w {
			others = append(others, o)
		}
	}
	l, validity, err := d.acquireEverywhere(ctx, w, during != nil)
	if err != nil {
		return exitCode(exitFailure, fmt.Errorf("demo: %w", err))
	}
	stop := d.background(ctx, others)
	defer stop()
	d.println("  %s  %s %s  acquired for a %v job  %s", d.at(), w.label(), d.s.green("●"), job,
		d.s.dim(fmt.Sprintf("(valid %v, token %s)", validity.Round(time.Millisecond), shortToken(l.Token()))))
	wctx, wcancel := context.WithCancel(ctx)
	watched := make(chan int, 1)
	go func() { watched <- d.watch(wctx, l.Token()) }()
	duringDone := make(chan struct{})
	go func() {
		defer close(duringDone)
		if during != nil {
			during()
		}
	}()
	rec := d.turn(w, l, validity, job)
	<-duringDone
	wcancel()
	extensions := <-watched
	status := d.s.green("never lost")
	if rec.lost != nil {
		status = d.s.red("LOST: " + rec.lost.Error())
	}
	d.println("  %s  %s %s  released after %v (%.1f× the TTL), %d extensions, %s",
		d.at(), w.label(), "○", (rec.end - rec.start).Round(10*time.Millisecond),
		float64(rec.end-rec.start)/float64(demoTTL), extensions, status)
	return ctx.Err()
}

// acquireEverywhere takes the lock for a long job. When a node is about to
// be killed (everywhere), the holding must sit on every node: an attempt of
// a worker stopped a moment ago may still land its SET on one node (a
// cancelled attempt's SETs finish, and their deletes follow them), and a
// lock held on a bare quorum would not survive the kill. Such a holding is
// given back and taken again, a few times at most.
func (d *demo) acquireEverywhere(ctx context.Context, w *demoWorker, everywhere bool) (*redlock.Lock, time.Duration, error) {
	for try := 0; ; try++ {
		d.waitFree(ctx)
		l := w.f.NewLock(d.name)
		validity, err := l.Acquire(ctx)
		if err != nil || !everywhere || try == 4 || d.heldEverywhere(ctx, w, l.Token()) {
			return l, validity, err
		}
		_ = l.Release(ctx)
	}
}

// heldEverywhere reports whether every node stores token under the lock's
// name.
func (d *demo) heldEverywhere(ctx context.Context, w *demoWorker, token string) bool {
	in, err := w.f.Inspect(ctx, d.name)
	if err != nil {
		return false
	}
	for _, n := range in.Nodes {
		if n.Token != token {
			return false
		}
	}
	return true
}

// waitFree waits (up to a second) until no node has the lock's key. A
// release returns once a quorum deleted the key and the last node's delete
// may still be under way; a lock taken then is held on a bare quorum of
// nodes, and would not survive the node the demo is about to kill.
func (d *demo) waitFree(ctx context.Context) {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		in, err := d.watcher.f.Inspect(ctx, d.name)
		if err == nil && !slices.ContainsFunc(in.Nodes, func(n redlock.NodeState) bool { return n.Token != "" }) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// watch polls the lock from the outside with Inspect and prints each
// extension of token: a jump up of the TTL a quorum holds.
func (d *demo) watch(ctx context.Context, token string) int {
	var last time.Duration
	n := 0
	tick := time.NewTicker(40 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return n
		case <-tick.C:
		}
		ictx, cancel := context.WithTimeout(ctx, time.Second)
		in, err := d.watcher.f.Inspect(ictx, d.name)
		cancel()
		if err != nil || in.Holder != token {
			continue
		}
		if last > 0 && in.HolderTTL > last+100*time.Millisecond {
			n++
			var on, down []string
			for _, st := range in.Nodes {
				switch {
				case st.Err != nil:
					down = append(down, fmt.Sprint(st.Node))
				case st.Token == token:
					on = append(on, fmt.Sprint(st.Node))
				}
			}
			note := ""
			if len(down) > 0 {
				note = d.s.yellow(fmt.Sprintf(" (node %s down: %d of %d is a quorum)", strings.Join(down, " "), len(on), len(in.Nodes)))
			}
			d.println("  %s  %s extended: TTL back to %v on nodes %s%s", d.at(), d.s.cyan("↻"),
				in.HolderTTL.Round(10*time.Millisecond), strings.Join(on, " "), note)
		}
		last = in.HolderTTL
	}
}

func (d *demo) phaseLongJob(ctx context.Context) error {
	d.heading(2, "Autoextension",
		fmt.Sprintf("Worker 1 holds the lock for %v, %d× its %v TTL, while the others keep", demoLongJob, demoLongJob/demoTTL, demoTTL),
		"trying. The autoextender renews the lock at 3/4 of its validity.")
	return d.longJob(ctx, d.workers[0], demoLongJob, nil)
}

func (d *demo) phaseNodeDies(ctx context.Context) error {
	victim := len(d.urls) - 1
	what := "killed"
	if d.emb == nil {
		what = "cut off (this process stops talking to it)"
	}
	d.heading(3, "A node dies",
		fmt.Sprintf("Worker 2 holds the lock for %v; node %d is %s meanwhile.", demoKillJob, victim, strings.SplitN(what, " (", 2)[0]),
		fmt.Sprintf("%d of %d nodes are still a quorum, so the lock survives.", d.quorum, len(d.urls)))
	kill := func() {
		time.Sleep(demoKillAfter)
		d.cutNode(victim)
		d.println("  %s  %s node %d (%s) %s", d.at(), d.s.red("✗"), victim, d.addrs[victim], what)
	}
	if err := d.longJob(ctx, d.workers[1], demoKillJob, kill); err != nil {
		return err
	}
	from := d.turnCount()
	stop := d.background(ctx, d.workers)
	select {
	case <-time.After(demoAfterKill):
	case <-ctx.Done():
	}
	stop()
	n, per := d.turnsSince(from)
	d.println("  %s  … %d more turns on the %d remaining nodes (per worker: %s)", d.at(), n, len(d.urls)-1, per)
	return ctx.Err()
}

// cutNode kills an embedded node, or cuts a configured one off.
func (d *demo) cutNode(i int) {
	d.cut[i].Store(true)
	if d.emb != nil {
		d.emb.kill(i)
	}
}

// verify checks that no two turns overlapped and no increment was lost.
func (d *demo) verify() error {
	d.mu.Lock()
	turns := slices.Clone(d.turns)
	d.mu.Unlock()
	slices.SortFunc(turns, func(a, b turnRecord) int { return int(a.start - b.start) })
	var problems []string
	for i, t := range turns {
		if t.lost != nil {
			problems = append(problems, fmt.Sprintf("worker %d lost the lock at +%.2fs", t.worker, t.end.Seconds()))
		}
		if i > 0 && t.start < turns[i-1].end {
			p := turns[i-1]
			problems = append(problems, fmt.Sprintf("worker %d (+%.3fs..+%.3fs) overlaps worker %d (+%.3fs..+%.3fs)",
				t.worker, t.start.Seconds(), t.end.Seconds(), p.worker, p.start.Seconds(), p.end.Seconds()))
		}
	}
	counter := d.counter.Load()
	if counter != int64(len(turns)) {
		problems = append(problems, fmt.Sprintf("counter = %d after %d turns: %d updates lost", counter, len(turns), int64(len(turns))-counter))
	}
	d.println("\n%s", d.s.bold("Result"))
	d.println("  %d turns by %d workers in %.1fs, one node down; every pair of turns checked",
		len(turns), len(d.workers), time.Since(d.t0).Seconds())
	if len(problems) > 0 {
		for _, p := range problems {
			d.println("  %s %s", d.s.red("✗"), p)
		}
		return exitCode(exitFailure, fmt.Errorf("demo: %d problem(s) found: %s", len(problems), problems[0]))
	}
	d.println("  %s no overlaps, counter = %d", d.s.green("✓"), counter)
	return nil
}
