package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/spf13/cobra"
)

// forwarded are the signals redlock passes on to the command's group.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// waitValue is the --wait flag: a positive duration or "forever".
type waitValue struct {
	d       time.Duration
	forever bool
}

func (w *waitValue) String() string {
	if w.forever {
		return "forever"
	}
	return w.d.String()
}

func (w *waitValue) Set(s string) error {
	if s == "forever" {
		w.forever, w.d = true, 0
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration or \"forever\": %q", s)
	}
	if d <= 0 {
		return fmt.Errorf("must be positive (or \"forever\"; use --no-wait for one attempt): %q", s)
	}
	w.d, w.forever = d, false
	return nil
}

func (w *waitValue) Type() string { return "duration" }

type runCmd struct {
	nodes     *nodeFlags
	lock      *lockFlags
	wait      waitValue
	noWait    bool
	killGrace time.Duration
	verbose   bool
	permits   int // 0: a plain lock; else a semaphore of that many permits
	fencing   bool
	metrics   string // --metrics-addr
	stderr    io.Writer
}

func newRunCmd() *cobra.Command {
	r := &runCmd{wait: waitValue{forever: true}}
	cmd := &cobra.Command{
		Use:   "run [flags] NAME -- CMD [ARGS...]",
		Short: "Run a command while holding a lock (or one of N permits)",
		Long: `Acquire the lock NAME, run CMD while extending the lock in the background,
and release the lock when CMD exits. stdin, stdout and stderr pass straight
through, and redlock exits with CMD's exit code.

By default run waits for the lock without limit, as flock(1), 'consul lock'
and 'etcdctl lock' do. --wait D gives up after D and --no-wait after one
attempt (like flock -w and flock -n), both with exit 75. Under -v, or when
stderr is a terminal, a run that has to wait says once who holds the lock
and how long that holding has left, and then when it got the lock.

With --permits N, NAME is a semaphore of N permits: CMD runs once fewer
than N copies hold one, so at most N copies run at once (all copies must
give the same N). CMD also sees REDLOCK_PERMIT, the permit it holds
(0 to N-1).

CMD runs in its own process group. SIGINT, SIGTERM, SIGHUP and SIGQUIT sent
to redlock are forwarded to that group; the lock is released once CMD has
exited. If the lock is lost while CMD runs (its keys vanished from a quorum
of nodes, which redlock hears within a round trip, or a quorum could not be
reached before its validity ran out), the group gets SIGTERM at once, then
SIGKILL after --kill-grace. If redlock itself dies (SIGKILL, a crash, the
OOM killer), nothing extends the lock any more: a guardian process that
redlock starts beside CMD then stops the group the same way.

CMD sees REDLOCK_NAME and REDLOCK_TOKEN in its environment. With --fencing
it also sees REDLOCK_FENCE, a fencing token larger than that of every
earlier holder of NAME: pass it to the resource CMD writes to, which
refuses a token below one it has seen, so that a CMD that outlived its
lock (a paused host) cannot overwrite the work of the next holder.

Exit codes:
  CMD's own   CMD exited (128+n if signal n killed it)
  64          bad command line or configuration
  69          fewer than a quorum of nodes reachable
  75          lock not acquired within --wait (or at once, with --no-wait)
  76          lock lost while CMD ran; CMD was stopped
  126, 127    CMD cannot be executed, or was not found`,
		Example: `  redlock run --ttl 30s --wait 1m nightly-report -- ./report.sh --full
  redlock run --no-wait migrations -- make migrate    # skip if another host runs it
  redlock run --permits 4 --wait forever encoder -- ./encode.sh   # at most 4 at once
  redlock run --fencing ledger -- sh -c 'psql -v fence="$REDLOCK_FENCE" -f post.sql'`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			switch {
			case len(args) == 0:
				return argsError(cmd, "run needs a lock NAME, '--' and a command")
			case dash < 0:
				return argsError(cmd, "missing '--' between the lock name and the command")
			case dash == 0:
				return argsError(cmd, "missing the lock NAME before '--'")
			case dash > 1:
				return argsError(cmd, "run takes one lock NAME before '--', got %d: %s", dash, strings.Join(args[:dash], " "))
			case len(args) == dash:
				return argsError(cmd, "missing the command after '--'")
			}
			return nil
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if cmd.ArgsLenAtDash() >= 0 {
				return nil, cobra.ShellCompDirectiveDefault // the command and its files
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			r.stderr = cmd.ErrOrStderr()
			if cmd.Flags().Changed("permits") && r.permits < 1 {
				return usageErr("--permits %d: must be at least 1", r.permits)
			}
			return r.run(args[0], args[cmd.ArgsLenAtDash():])
		},
	}
	r.nodes = addNodeFlags(cmd)
	r.lock = addLockFlags(cmd, 30*time.Second)
	f := cmd.Flags()
	f.Var(&r.wait, "wait", `how long to wait for the lock: a duration, or "forever" (no limit, as flock)`)
	f.BoolVar(&r.noWait, "no-wait", false, "make one attempt and give up (exit 75) if the lock is held")
	f.DurationVar(&r.killGrace, "kill-grace", 10*time.Second, "after a lost lock (or redlock's death), time between SIGTERM and SIGKILL")
	f.BoolVarP(&r.verbose, "verbose", "v", false, "report waiting, acquisition, forwarded signals and release on stderr")
	f.IntVar(&r.permits, "permits", 0, "hold one of N permits of the semaphore NAME instead of the lock NAME")
	f.BoolVar(&r.fencing, "fencing", false, "mint a fencing token and export it to CMD as REDLOCK_FENCE")
	addMetricsFlag(cmd, &r.metrics)
	cmd.MarkFlagsMutuallyExclusive("permits", "fencing")
	cmd.MarkFlagsMutuallyExclusive("wait", "no-wait")
	_ = cmd.RegisterFlagCompletionFunc("wait", cobra.FixedCompletions([]string{"10s", "1m", "10m", "forever"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (r *runCmd) logf(format string, args ...any) {
	if r.verbose {
		fmt.Fprintf(r.stderr, "redlock: "+format+"\n", args...)
	}
}

func (r *runCmd) run(name string, argv []string) error {
	if r.killGrace < 0 {
		return usageErr("--kill-grace %v is negative", r.killGrace)
	}
	m, err := startMetrics(r.metrics)
	if err != nil {
		return err
	}
	defer m.close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := r.connect(ctx, append([]redlock.Option{redlock.WithFencing(r.fencing)}, m.options()...)...)
	if err != nil {
		return err
	}
	defer c.close()

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	lock, err := r.acquire(ctx, c, name, sigs)
	if err != nil {
		return err
	}
	env := []string{"REDLOCK_NAME=" + name, "REDLOCK_TOKEN=" + lock.Token()}
	if sem, ok := lock.(*redlock.Semaphore); ok {
		env = append(env, "REDLOCK_PERMIT="+strconv.Itoa(sem.Permit()))
	}
	if r.fencing { // a plain Lock: --fencing excludes --permits
		env = append(env, "REDLOCK_FENCE="+strconv.FormatInt(lock.(*redlock.Lock).Fence(), 10))
	}
	ch, err := startChild(argv, env, name, r.killGrace)
	if err != nil {
		r.release(lock)
		return err
	}
	code, lost := r.supervise(ch, lock, sigs)
	if lost {
		return silentExit{code: exitLockLost}
	}
	r.release(lock)
	return silentExit{code: code}
}

// connect opens the nodes and checks that a quorum answers, warning about
// the others.
func (r *runCmd) connect(ctx context.Context, opts ...redlock.Option) (*cluster, error) {
	nodes, err := r.nodes.nodes()
	if err != nil {
		return nil, err
	}
	if nodes.none() {
		return nil, noNodesError()
	}
	c, err := openHoldingCluster(ctx, nodes, append(r.lock.options(), opts...)...)
	if err != nil {
		return nil, err
	}
	down, err := c.requireQuorum(ctx, r.lock.quorumFor(c.size()))
	if err != nil {
		c.close()
		return nil, err
	}
	for _, node := range down {
		fmt.Fprintf(r.stderr, "redlock: warning: going on without node %s\n", node)
	}
	return c, nil
}

// noNodesError says how to configure nodes.
func noNodesError() error {
	return usageErr("no nodes configured: give --nodes redis://a:6379,redis://b:6379,redis://c:6379 or set %s, or give a Redis Cluster's seeds with --cluster or %s (try 'redlock dev' for local nodes)", EnvNodes, EnvCluster)
}

// acquire takes the lock, waiting as the flags say. A forwarded signal
// during the wait ends redlock as that signal would (128+n).
func (r *runCmd) acquire(ctx context.Context, c *cluster, name string, sigs <-chan os.Signal) (redlock.Locker, error) {
	lock := r.newHolder(c, name)
	try := lock.Acquire
	actx, cancel := context.WithCancel(ctx)
	switch {
	case r.noWait:
		lock = r.newHolder(c, name, redlock.WithRetryTimes(0))
		try = lock.TryAcquire
	case !r.wait.forever:
		cancel()
		actx, cancel = context.WithTimeout(ctx, r.wait.d)
	}
	defer cancel()
	type result struct {
		validity time.Duration
		err      error
	}
	res := make(chan result, 1)
	start := time.Now()
	go func() {
		v, err := try(actx)
		res <- result{v, err}
	}()
	var notice <-chan string
	if !r.noWait {
		notice = r.waitNotice(actx, func(ictx context.Context) string { return r.heldBy(ictx, c, name) })
	}
	var got result
	waited := false
	for done := false; !done; {
		select {
		case got = <-res:
			done = true
		case line := <-notice:
			notice, waited = nil, true
			fmt.Fprintf(r.stderr, "redlock: %s\n", line)
		case sig := <-sigs:
			cancel()
			if got = <-res; got.err == nil {
				r.release(lock)
			}
			return nil, silentExit{code: exitSignalBase + int(sig.(syscall.Signal))}
		}
	}
	if got.err != nil {
		return nil, r.notAcquired(ctx, c, name, got.err)
	}
	after := ""
	if waited {
		after = " after " + time.Since(start).Round(time.Millisecond).String()
	}
	switch {
	case r.verbose:
		r.logf("acquired %q%s (validity %v, token %s)", name, after, got.validity.Round(time.Millisecond), lock.Token())
	case waited:
		fmt.Fprintf(r.stderr, "redlock: acquired %q%s\n", name, after)
	}
	return lock, nil
}

// noticeAfter is how long an acquisition may take before redlock says
// that it waits: a free lock is acquired well within it, so only real
// waits are reported.
const noticeAfter = 200 * time.Millisecond

// reportsWaits says whether a wait for the lock is announced: under -v,
// or when stderr is a terminal (someone is watching).
func (r *runCmd) reportsWaits() bool { return r.verbose || isTerminal(r.stderr) }

// waitNotice returns a channel that yields, once the acquisition has been
// waiting for noticeAfter, the line that says what it waits for (describe
// reads the holder, bounded by its context); nil when waits are not
// reported. Its goroutine ends with ctx.
func (r *runCmd) waitNotice(ctx context.Context, describe func(context.Context) string) <-chan string {
	if !r.reportsWaits() {
		return nil
	}
	ch := make(chan string, 1)
	go func() {
		t := time.NewTimer(noticeAfter)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ictx, cancel := context.WithTimeout(ctx, pingTimeout)
		defer cancel()
		line := describe(ictx)
		if ctx.Err() == nil {
			ch <- line
		}
	}()
	return ch
}

// forWhat is how long the acquisition waits, for messages: "up to 10s"
// or "without limit".
func (w *waitValue) forWhat() string {
	if w.forever {
		return "without limit"
	}
	return "up to " + w.d.String()
}

// heldBy is the line of a run that waits for the lock name (or a permit
// of the semaphore name): who holds it and how long the holding has left.
func (r *runCmd) heldBy(ctx context.Context, c *cluster, name string) string {
	if r.permits > 0 {
		return r.permitsHeldBy(ctx, c, name)
	}
	head := fmt.Sprintf("waiting %s for lock %q", r.wait.forWhat(), name)
	in, err := c.factory.Inspect(ctx, name)
	switch {
	case err != nil:
		return fmt.Sprintf("%s; its holder is unknown: %s", head, cause(err))
	case in.Held():
		return fmt.Sprintf("%s, held by another client (token %s, %v left unless extended)",
			head, shortToken(in.Holder), in.HolderTTL.Round(100*time.Millisecond))
	}
	return head + ", which no client holds on a quorum now (contenders split the vote, or nodes do not answer)"
}

// permitsHeldBy is heldBy for a semaphore: how many permits are held and
// when the first of them expires.
func (r *runCmd) permitsHeldBy(ctx context.Context, c *cluster, name string) string {
	head := fmt.Sprintf("waiting %s for a permit of semaphore %q", r.wait.forWhat(), name)
	held, soonest := 0, time.Duration(0)
	for i := range r.permits {
		// The slots are the keys NAME:permit:I (Semaphore.Name).
		in, err := c.factory.Inspect(ctx, name+":permit:"+strconv.Itoa(i))
		if err != nil {
			return fmt.Sprintf("%s; its holders are unknown: %s", head, cause(err))
		}
		if in.Held() {
			held++
			if soonest == 0 || in.HolderTTL < soonest {
				soonest = in.HolderTTL
			}
		}
	}
	if held == 0 {
		return head + ", of which no client holds one on a quorum now (contenders split the vote, or nodes do not answer)"
	}
	return fmt.Sprintf("%s: %d of %d permits held by other clients, the first frees in %v unless extended",
		head, held, r.permits, soonest.Round(100*time.Millisecond))
}

// newHolder is the lock NAME, or with --permits a permit of the semaphore
// NAME.
func (r *runCmd) newHolder(c *cluster, name string, opts ...redlock.Option) redlock.Locker {
	if r.permits > 0 {
		return c.factory.NewSemaphore(name, r.permits, opts...)
	}
	return c.factory.NewLock(name, opts...)
}

// notAcquired explains a failed acquisition, naming the holder's remaining
// time when another holder has the lock.
func (r *runCmd) notAcquired(ctx context.Context, c *cluster, name string, err error) error {
	if errors.Is(err, redlock.ErrInvalidArgument) {
		return classify(err)
	}
	within := "at once (--no-wait)"
	if !r.noWait {
		within = "within " + r.wait.String()
	}
	if !errors.Is(err, redlock.ErrNotAcquired) {
		return exitCode(exitUnavailable, err)
	}
	if r.permits > 0 {
		return exitCode(exitNotAcquired, fmt.Errorf("no permit of semaphore %q (%d permits) acquired %s%s", name, r.permits, within, nodeFailures(err)))
	}
	ictx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if in, ierr := c.factory.Inspect(ictx, name); ierr == nil && in.Held() {
		return exitCode(exitNotAcquired, fmt.Errorf("lock %q not acquired %s: held by another client (%v left unless extended)",
			name, within, in.HolderTTL.Round(time.Millisecond)))
	}
	// err says "not acquired" again and, for a --wait that ran out,
	// "context deadline exceeded": only failed nodes are news.
	return exitCode(exitNotAcquired, fmt.Errorf("lock %q not acquired %s%s", name, within, nodeFailures(err)))
}

// nodeFailures summarises the node errors inside err for the end of a
// message: "; node 2 (host:port): connection refused" and how many more
// nodes failed; "" if err holds none. A node whose command was cut short
// by the end of the wait did not fail: it is left out.
func nodeFailures(err error) string {
	var found []*redlock.NodeError
	var walk func(error)
	walk = func(e error) {
		switch u := e.(type) {
		case *redlock.NodeError:
			if !errors.Is(u.Err, context.DeadlineExceeded) && !errors.Is(u.Err, context.Canceled) {
				found = append(found, u)
			}
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				walk(c)
			}
		case interface{ Unwrap() error }:
			if c := u.Unwrap(); c != nil {
				walk(c)
			}
		}
	}
	walk(err)
	if len(found) == 0 {
		return ""
	}
	ne := found[0]
	where := fmt.Sprintf("node %d", ne.Node)
	if ne.Addr != "" {
		where += " (" + ne.Addr + ")"
	}
	msg := fmt.Sprintf("; %s: %s", where, cause(ne))
	if len(found) > 1 {
		msg += fmt.Sprintf(" (and %d more nodes failed)", len(found)-1)
	}
	return msg
}

// holder is what supervise watches: a lock, a permit or a leadership.
type holder interface {
	Name() string
	Done() <-chan struct{}
	Err() error
}

// supervise waits for the child, forwarding signals and stopping it when
// the lock is lost. It returns the child's exit code and whether the lock
// was lost.
func (r *runCmd) supervise(ch *child, lock holder, sigs <-chan os.Signal) (code int, lost bool) {
	exited := make(chan int, 1)
	go func() { exited <- ch.wait() }()
	done := lock.Done()
	var kill <-chan time.Time
	for {
		select {
		case code = <-exited:
			return code, lost
		case <-done:
			done, lost = nil, true
			cause := lock.Err()
			if cause == nil {
				cause = errors.New("lock ended")
			}
			fmt.Fprintf(r.stderr, "%s; sending SIGTERM to the command, SIGKILL in %v\n",
				errorLine(fmt.Errorf("lock %q lost while the command ran: %w", lock.Name(), cause), ""), r.killGrace)
			ch.signal(syscall.SIGTERM)
			t := time.NewTimer(r.killGrace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			r.logf("the command did not exit within %v; sending SIGKILL", r.killGrace)
			ch.signal(syscall.SIGKILL)
		case sig := <-sigs:
			r.logf("forwarding %s to the command", signalName(sig))
			ch.signal(sig.(syscall.Signal))
		}
	}
}

// release releases the lock after the command; a failure is a warning, as
// the keys expire with the TTL anyway.
//
// The context is not cancelled when Release returns: Release returns once a
// quorum answered, and the delete on the remaining nodes goes on with the
// caller's context (bounded by the node timeout) until Factory.Close waits
// for it.
func (r *runCmd) release(lock redlock.Locker) {
	if err := lock.Release(context.Background()); err != nil {
		fmt.Fprintf(r.stderr, "redlock: warning: release of %q failed, its keys expire within the TTL: %s\n",
			lock.Name(), strings.TrimPrefix(errorLine(err, ""), "redlock: "))
		return
	}
	r.logf("released %q", lock.Name())
}
