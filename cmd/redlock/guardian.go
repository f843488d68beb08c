//go:build unix

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A guardian stops the command's process group when redlock dies while the
// command runs: killed with SIGKILL, crashed, or taken by the OOM killer,
// redlock no longer extends the lock, which runs out within a TTL while
// the command would go on working unprotected. The kernel's parent-death
// signal alone reaches only the command's first process, and only with
// SIGTERM, which a command may ignore; the guardian signals the whole
// group, SIGTERM and then SIGKILL after --kill-grace, as a lost lock does.
//
// The guardian is redlock itself, started again with guardianArg before
// the command, in a process group of its own so that the terminal's
// signals do not reach it. Its lifeline is a pipe that only redlock
// writes: redlock sends the command's group id once the command has
// started and "done" once it has exited. End of file before "done" means
// that redlock died.
type guardian struct {
	cmd      *exec.Cmd
	lifeline *os.File
}

// guardianArg is the first argument that makes redlock a guardian; it is
// not a command users see.
const guardianArg = "__redlock-guardian"

// lifelineDone stands a guardian down: the command has exited, or never
// started.
const lifelineDone = "done\n"

// groupPoll is how often a guardian looks whether the group it stopped is
// gone.
const groupPoll = 20 * time.Millisecond

// startGuardian starts the guardian of a command run under lock name,
// which gives the command grace between SIGTERM and SIGKILL.
func startGuardian(name string, grace time.Duration) (*guardian, error) {
	exe, err := executable()
	if err != nil {
		return nil, fmt.Errorf("cannot start the guardian of the command: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("cannot start the guardian of the command: %w", err)
	}
	cmd := exec.Command(exe, guardianArg, name, grace.String())
	cmd.ExtraFiles = []*os.File{r} // fd 3
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("cannot start the guardian of the command: %w", err)
	}
	return &guardian{cmd: cmd, lifeline: w}, nil
}

// watch tells the guardian the process group to stop if redlock dies.
func (g *guardian) watch(pgid int) {
	_, _ = fmt.Fprintf(g.lifeline, "%d\n", pgid)
}

// standDown tells the guardian that the command has exited (or never
// started) and waits for it to exit.
func (g *guardian) standDown() {
	_, _ = io.WriteString(g.lifeline, lifelineDone)
	g.lifeline.Close()
	_ = g.cmd.Wait()
}

// asGuardian runs redlock as a guardian when args say so, and returns its
// exit code; ok is false for any other command line.
func asGuardian(args []string) (code int, ok bool) {
	if len(args) != 3 || args[0] != guardianArg {
		return 0, false
	}
	grace, err := time.ParseDuration(args[2])
	if err != nil {
		fmt.Fprintf(os.Stderr, "redlock: guardian: bad grace %q\n", args[2])
		return exitUsage, true
	}
	// Its life is its lifeline's: the signals sent to redlock's name (pkill
	// redlock) are redlock's to forward, not the guardian's to die of.
	signal.Ignore(forwarded...)
	guard(os.NewFile(3, "lifeline"), args[1], grace)
	return exitOK, true
}

// guard reads the lifeline and stops the command's group when it ends
// before "done".
func guard(lifeline io.Reader, name string, grace time.Duration) {
	rd := bufio.NewReader(lifeline)
	line, err := rd.ReadString('\n')
	if err != nil || line == lifelineDone {
		return // the command never started, or redlock ended before it
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pgid <= 1 {
		fmt.Fprintf(os.Stderr, "redlock: guardian: bad process group %q\n", line)
		return
	}
	if line, err := rd.ReadString('\n'); err == nil && line == lifelineDone {
		return
	}
	fmt.Fprintf(os.Stderr, "redlock: redlock died while the command held lock %q, which runs out unextended; sending SIGTERM to the command, SIGKILL in %v\n", name, grace)
	stopGroup(pgid, grace)
}

// stopGroup sends the process group SIGTERM and, unless it is gone within
// grace, SIGKILL.
func stopGroup(pgid int, grace time.Duration) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	for deadline := time.Now().Add(grace); time.Now().Before(deadline); time.Sleep(groupPoll) {
		if syscall.Kill(-pgid, 0) != nil { // ESRCH: no process left in the group
			return
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// executable names this program for starting it again: /proc/self/exe
// where there is one, which still runs a binary replaced or deleted since
// it started (an upgrade), and the path it was started from elsewhere.
func executable() (string, error) {
	const self = "/proc/self/exe"
	if _, err := os.Stat(self); err == nil {
		return self, nil
	}
	return os.Executable()
}
