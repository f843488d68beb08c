package failover

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

// Environment of the holder process of scenario 5.
const (
	envHolderURLs = "FAILOVER_HOLDER_URLS"
	envHolderLock = "FAILOVER_HOLDER_LOCK"
	envHolderTTL  = "FAILOVER_HOLDER_TTL"
)

// TestHolderProcess is the holder of scenario 5, run as a process of its
// own: it acquires the lock with autoextension on, says so, and keeps it
// until it is killed. Run directly, it skips.
func TestHolderProcess(t *testing.T) {
	urls := os.Getenv(envHolderURLs)
	if urls == "" {
		t.Skip("the holder process of scenario 5; started by TestSafety")
	}
	ttl, err := time.ParseDuration(os.Getenv(envHolderTTL))
	if err != nil {
		t.Fatal(err)
	}
	f, err := redlock.NewFactoryFromURLs(strings.Split(urls, ","), redlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l := f.NewLock(os.Getenv(envHolderLock)) // autoextends by default
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("ACQUIRED %s %d\n", l.Token(), v)
	select {
	case <-l.Done():
		t.Fatalf("the holder lost its lock: %v", l.Err())
	case <-time.After(time.Minute): // killed long before
	}
}

// 5. A holder that crashes without releasing: a process holding the lock
// (autoextending) is killed with SIGKILL; the next acquirer gets the lock
// within TTL + retry jitter.
func (s *suite) crashedHolder(t *testing.T) {
	start := time.Now()
	const ttl, retry = time.Second, 50 * time.Millisecond
	const lock = "s5"
	cmd := exec.Command(os.Args[0], "-test.run=^TestHolderProcess$")
	cmd.Env = append(os.Environ(),
		envHolderURLs+"="+strings.Join(s.c.URLs(), ","), envHolderLock+"="+lock, envHolderTTL+"="+ttl.String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default: // nobody listens any more
			}
		}
	}()
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		<-scanned
	})
	var token string
	timeout := time.After(30 * time.Second)
	for token == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("the holder process ended before it acquired the lock")
			}
			if f := strings.Fields(line); len(f) == 3 && f[0] == "ACQUIRED" {
				token = f[1]
			}
		case <-timeout:
			t.Fatal("the holder process did not acquire the lock within 30s")
		}
	}
	acquired := now()
	f := factory(t, s.c.Pools(), redlock.WithTTL(ttl))
	h := newHistory()
	w := workload{clients: 8, names: []string{lock}, newLocker: libLockers(f),
		retryDelay: retry, hold: holdUniform(time.Millisecond)}
	stop, _ := w.start(h)
	defer stop()
	time.Sleep(2 * ttl) // the holder keeps the lock past its TTL by autoextending
	_ = cmd.Process.Kill()
	crashed := now()
	_ = cmd.Wait()
	killed = true
	held := h.successesIn(0, crashed)
	time.Sleep(ttl + 500*time.Millisecond)
	stop()
	first, ok := h.firstSuccessAfter(crashed)
	r := h.figures("5 crashed holder", 1+w.clients)
	r.Detect = first - crashed
	r.Note = fmt.Sprintf("the holder process held it %v and was killed; next acquisition %v after the crash (bound ttl+retry = %v)",
		(crashed - acquired).Round(time.Millisecond), (first - crashed).Round(time.Millisecond), ttl+retry)
	s.finish(t, r, h, start)
	if held != 0 {
		t.Errorf("%d acquisitions while the holder process was alive", held)
	}
	if !ok || first-crashed > ttl+retry {
		t.Errorf("next acquisition %v after the crash (found %v), want within %v", first-crashed, ok, ttl+retry)
	}
}
