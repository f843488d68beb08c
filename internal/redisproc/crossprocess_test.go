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
	cmd := exec.Command(os.Args[0], "-test.run=^TestTwoBinariesOnePort$")
	cmd.Env = append(os.Environ(), envSharedPort+"="+strconv.Itoa(shared))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
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
