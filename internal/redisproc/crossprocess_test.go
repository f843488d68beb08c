//go:build unix

package redisproc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// envSharedPort tells the child of TestTwoBinariesOnePort which port to
// pick first.
const envSharedPort = "REDISPROC_TEST_SHARED_PORT"

// TestTwoBinariesOnePort is the collision of issue 9 for real: this test
// binary re-executes itself, and both processes, which cannot see each
// other's picks, start a node on the same port. The first to bind keeps it;
// the other must notice that the server answering is not its own and move,
// so that each ends up with a node of its own.
func TestTwoBinariesOnePort(t *testing.T) {
	if port := os.Getenv(envSharedPort); port != "" {
		childNode(t, port)
		return
	}
	shared, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd, stdin, stdout := startChild(t, "TestTwoBinariesOnePort", envSharedPort+"="+strconv.Itoa(shared))
	child := make(chan [2]int, 1)
	go readStarted(stdout, child)

	pickFirst(t, shared)
	ours := start(t, Config{})
	var theirs [2]int // port, pid
	select {
	case got, ok := <-child:
		if !ok {
			t.Fatal("the child ended without starting a node")
		}
		theirs = got
	case <-time.After(30 * time.Second):
		t.Fatal("the child started no node within 30s")
	}
	if theirs[0] == ours.Port || theirs[1] == ours.Pid {
		t.Fatalf("both binaries use one node: ours port %d process %d, theirs port %d process %d", ours.Port, ours.Pid, theirs[0], theirs[1])
	}
	if (ours.Port == shared) == (theirs[0] == shared) {
		t.Fatalf("ports %d and %d: exactly one binary should have kept the shared port %d", ours.Port, theirs[0], shared)
	}
	assertOwn(t, ours)
	id, _, err := probe(addrOf(theirs[0]))
	if err != nil || id.pid != theirs[1] {
		t.Fatalf("the child's port %d is answered by process %d (%v), want %d", theirs[0], id.pid, err, theirs[1])
	}
	stdin.Close() // lets the child stop its node and pass
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}

// childNode is the other binary of TestTwoBinariesOnePort: it starts a
// node, picking port first, says which, and keeps it until stdin closes.
func childNode(t *testing.T, port string) {
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	pickFirst(t, p)
	n := start(t, Config{})
	fmt.Printf("STARTED %d %d\n", n.Port, n.Pid)
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// readStarted sends the port and process id of the child's STARTED line,
// then drains the rest of its output until it exits, and closes started.
func readStarted(r io.Reader, started chan<- [2]int) {
	defer close(started)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var port, pid int
		if _, err := fmt.Sscanf(sc.Text(), "STARTED %d %d", &port, &pid); err == nil {
			started <- [2]int{port, pid}
		}
	}
}

// addrOf is the loopback address of port.
func addrOf(port int) string { return (&Process{Port: port}).Addr() }

// startChild re-executes this test binary to run the test named test
// alone, with env added to its environment: the other process of a
// cross-process test. The child ends when the test does at the latest.
func startChild(t *testing.T, test, env string) (cmd *exec.Cmd, stdin io.WriteCloser, stdout io.Reader) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err = cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, stdin, stdout
}

// envHeldPort tells the child of TestReservedAcrossProcesses which port
// to reserve.
const envHeldPort = "REDISPROC_TEST_HELD_PORT"

// A port that one test process picked stays its own while it lives: the
// kernel offers a port that a killed node freed to the next bind that
// asks for any port, and a second test binary must not take it, or the
// killed node's replica or client would reach that binary's server. Once
// the process has exited, however it ended, the port can be reserved
// again.
func TestReservedAcrossProcesses(t *testing.T) {
	if port := os.Getenv(envHeldPort); port != "" {
		p, _ := strconv.Atoi(port)
		if _, ok := reserve(p); !ok {
			t.Fatalf("child: port %d is not free to reserve", p)
		}
		os.Stdout.WriteString("held\n")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes stdin
		return
	}
	port := 40000 + os.Getpid()%20000 // not one this binary picks: reserve is called directly
	cmd, stdin, stdout := startChild(t, "TestReservedAcrossProcesses", envHeldPort+"="+strconv.Itoa(port))
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("the child did not reserve port %d: %q, %v", port, line, err)
	}
	if f, ok := reserve(port); ok {
		f.Close()
		t.Fatalf("port %d reserved by this process while the child holds it", port)
	}
	if err := cmd.Process.Kill(); err != nil { // ended without a word: the kernel drops its lock
		t.Fatal(err)
	}
	_ = cmd.Wait()
	stdin.Close()
	f, ok := reserve(port)
	if !ok || f == nil {
		t.Fatalf("port %d not reserved once its holder died (ok %v, file %v)", port, ok, f)
	}
	f.Close()
}
