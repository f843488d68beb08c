package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/spf13/cobra"
)

// electCmd runs a command while this process leads an election.
type electCmd struct {
	runCmd
	value string
}

func newElectCmd() *cobra.Command {
	e := &electCmd{runCmd: runCmd{wait: waitValue{forever: true}}}
	cmd := &cobra.Command{
		Use:   "elect [flags] NAME --value V -- CMD [ARGS...]",
		Short: "Run a command while leading an election",
		Long: `Campaign in the election NAME with the value V (what 'Leader' reports to
others, e.g. this host's name), and once leading run CMD. Leadership is
extended in the background; if it is lost while CMD runs, CMD's group gets
SIGTERM within a round trip of the loss, then SIGKILL after --kill-grace, and redlock exits 76. When CMD
exits, redlock resigns and exits with CMD's code. CMD sees REDLOCK_NAME and
REDLOCK_VALUE in its environment. Signals are forwarded, and a guardian
stops CMD's group should redlock die, as for 'run'.

It waits for leadership without limit by default, as 'run' waits for a
lock; under -v, or when stderr is a terminal, a campaign that has to wait
says once who leads and how long that leadership has left.

Exit codes are those of 'run'; 75 means not leading within --wait.`,
		Example: `  redlock elect --ttl 10s scheduler --value "$(hostname)" -- ./scheduler`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			switch {
			case dash < 0:
				return argsError(cmd, "missing '--' between the election name and the command")
			case dash != 1:
				return argsError(cmd, "elect takes one election NAME before '--', got %d", dash)
			case len(args) == dash:
				return argsError(cmd, "missing the command after '--'")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			e.stderr = cmd.ErrOrStderr()
			if e.value == "" {
				return usageErr("elect needs a non-empty --value")
			}
			if e.killGrace < 0 {
				return usageErr("--kill-grace %v is negative", e.killGrace)
			}
			return e.run(args[0], args[cmd.ArgsLenAtDash():])
		},
	}
	e.nodes = addNodeFlags(cmd)
	e.lock = addLockFlags(cmd, 30*time.Second)
	f := cmd.Flags()
	f.StringVar(&e.value, "value", "", "this campaigner's value, reported as the leader's (required)")
	f.Var(&e.wait, "wait", `how long to wait for leadership: a duration, or "forever" (no limit)`)
	f.DurationVar(&e.killGrace, "kill-grace", 10*time.Second, "after a lost leadership, time between SIGTERM and SIGKILL")
	f.BoolVarP(&e.verbose, "verbose", "v", false, "report waiting, leadership, forwarded signals and resignation on stderr")
	return cmd
}

func (e *electCmd) run(name string, argv []string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := e.connect(ctx)
	if err != nil {
		return err
	}
	defer c.close()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	el := c.factory.NewElection(name)
	if err := e.campaign(ctx, c, el, sigs); err != nil {
		return err
	}
	ch, err := startChild(argv, []string{"REDLOCK_NAME=" + name, "REDLOCK_VALUE=" + e.value}, name, e.killGrace)
	if err != nil {
		e.resign(el)
		return err
	}
	code, lost := e.supervise(ch, el, sigs)
	if lost {
		return silentExit{code: exitLockLost}
	}
	e.resign(el)
	return silentExit{code: code}
}

// campaign waits for leadership as --wait says; a forwarded signal ends
// redlock as that signal would (128+n).
func (e *electCmd) campaign(ctx context.Context, c *cluster, el *redlock.Election, sigs <-chan os.Signal) error {
	cctx, cancel := context.WithCancel(ctx)
	if !e.wait.forever {
		cancel()
		cctx, cancel = context.WithTimeout(ctx, e.wait.d)
	}
	defer cancel()
	res := make(chan error, 1)
	start := time.Now()
	go func() { res <- el.Campaign(cctx, e.value) }()
	notice := e.waitNotice(cctx, func(ictx context.Context) string { return e.ledBy(ictx, c, el) })
	var err error
	waited := false
	for done := false; !done; {
		select {
		case err = <-res:
			done = true
		case line := <-notice:
			notice, waited = nil, true
			fmt.Fprintf(e.stderr, "redlock: %s\n", line)
		case sig := <-sigs:
			cancel()
			if <-res == nil {
				e.resign(el)
			}
			return silentExit{code: exitSignalBase + int(sig.(syscall.Signal))}
		}
	}
	switch {
	case err == nil:
		after := ""
		if waited {
			after = " after " + time.Since(start).Round(time.Millisecond).String()
		}
		if e.verbose || waited {
			fmt.Fprintf(e.stderr, "redlock: leading %q as %q%s\n", el.Name(), e.value, after)
		}
		return nil
	case errors.Is(err, redlock.ErrInvalidArgument):
		return classify(err)
	case errors.Is(err, redlock.ErrNotAcquired):
		leader := "nobody"
		if v, lerr := el.Leader(ctx); lerr == nil {
			leader = fmt.Sprintf("%q", v)
		}
		return exitCode(exitNotAcquired, fmt.Errorf("not leading %q within %s: the leader is %s", el.Name(), e.wait.String(), leader))
	}
	return exitCode(exitUnavailable, err)
}

// ledBy is the line of a campaign that waits: who leads, and how long
// the leadership has left.
func (e *electCmd) ledBy(ctx context.Context, c *cluster, el *redlock.Election) string {
	head := fmt.Sprintf("waiting %s to lead %q", e.wait.forWhat(), el.Name())
	leader, err := el.Leader(ctx)
	switch {
	case errors.Is(err, redlock.ErrNoLeader):
		return head + ", which no campaigner leads on a quorum now (contenders split the vote, or nodes do not answer)"
	case err != nil:
		return fmt.Sprintf("%s; its leader is unknown: %s", head, cause(err))
	}
	left := ""
	if in, ierr := c.factory.Inspect(ctx, el.Name()); ierr == nil && in.Held() {
		left = fmt.Sprintf(" (%v left unless extended)", in.HolderTTL.Round(100*time.Millisecond))
	}
	return fmt.Sprintf("%s: the leader is %q%s", head, leader, left)
}

// resign gives leadership up after the command; a failure is a warning,
// as the key expires with the TTL anyway.
func (e *electCmd) resign(el *redlock.Election) {
	if err := el.Resign(context.Background()); err != nil {
		fmt.Fprintf(e.stderr, "redlock: warning: resignation from %q failed, leadership expires within the TTL: %v\n", el.Name(), err)
		return
	}
	e.logf("resigned from %q", el.Name())
}
