package failover

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
)

// Environment of the fenced holder process.
const (
	envFencedURLs  = "FAILOVER_FENCED_URLS"
	envFencedLock  = "FAILOVER_FENCED_LOCK"
	envFencedStore = "FAILOVER_FENCED_STORE"
)

// The protected resource of the SIGSTOP scenario, in Redis: a counter in
// KEYS[1] guarded by the last token seen in KEYS[2]. ARGV[1] is the
// caller's token, ARGV[2] the value to write ("" to read). A token below
// the last one is refused (-1); otherwise it becomes the last one and the
// counter is returned after the write. Reads carry the token too, so that
// once a newer holder has read, an older one cannot write.
var fencedOp = redis.NewScript(2, `
local last = tonumber(redis.call("GET", KEYS[2]) or "0")
if tonumber(ARGV[1]) < last then return -1 end
redis.call("SET", KEYS[2], ARGV[1])
if ARGV[2] ~= "" then redis.call("SET", KEYS[1], ARGV[2]) end
return tonumber(redis.call("GET", KEYS[1]) or "0")`)

// Keys of the SIGSTOP scenario's resource on the store node.
const (
	pauseCounter = "s11:sigstop:counter"
	pauseLast    = "s11:sigstop:last"
	pausePlain   = "s11:sigstop:plain"
)

// TestFencedHolderProcess is the holder of the SIGSTOP scenario, run as a
// process of its own: it acquires the fenced lock (autoextending), reads
// the fenced counter and an unfenced copy, says so, waits a second (the
// test stops it meanwhile), then writes both back incremented and says
// what the store answered. Run directly, it skips.
func TestFencedHolderProcess(t *testing.T) {
	urls := os.Getenv(envFencedURLs)
	if urls == "" {
		t.Skip("the holder process of scenario 11; started by TestSafety")
	}
	f, err := redlock.NewFactoryFromURLs(strings.Split(urls, ","), redlock.WithTTL(time.Second), redlock.WithFencing(true))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	store, err := redis.DialURL(os.Getenv(envFencedStore))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l := f.NewLock(os.Getenv(envFencedLock))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	fence := l.Fence()
	v, err := redis.Int64(fencedOp.Do(store, pauseCounter, pauseLast, fence, ""))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := redis.Int64(store.Do("GET", pausePlain))
	if err != nil && err != redis.ErrNil {
		t.Fatal(err)
	}
	fmt.Printf("READ %d %d\n", fence, v)
	time.Sleep(time.Second) // stopped here, past the validity
	w, err := redis.Int64(fencedOp.Do(store, pauseCounter, pauseLast, fence, v+1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Do("SET", pausePlain, plain+1); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("WROTE %d\n", w)
	_ = l.Release(context.Background()) // lost by now
}

// fencingSIGSTOP: a holder process is stopped with SIGSTOP between its read
// and its write, until its lock has expired and another client has
// acquired it, incremented the counter and released it; then it is
// continued. Its late write is refused by the fenced counter and lands on
// the unfenced copy, which loses the other client's increment.
func (s *suite) fencingSIGSTOP(t *testing.T) {
	start := time.Now()
	const lock, rounds = "s11:sigstop", 3
	const storeNode = 4
	f := factory(t, s.c.Pools(), redlock.WithTTL(time.Second), redlock.WithFencing(true), redlock.WithRetryDelay(20*time.Millisecond))
	h := newHistory()
	refused, increments := 0, 0
	for range rounds {
		t0 := now()
		hp := s.startFencedHolder(t, lock, storeNode)
		holderFence, _ := strconv.ParseInt(hp.field(t, "READ", 1), 10, 64)
		if err := hp.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		h.issued(lock, holderFence, t0, now())

		l := f.NewLock(lock)
		b0 := now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := l.Acquire(ctx)
		cancel()
		if err != nil {
			t.Fatalf("the next holder could not acquire while the first was stopped: %v", err)
		}
		b1 := now()
		h.attempt(b0, b1, nil)
		h.issued(lock, l.Fence(), b0, b1)
		v, err := redis.Int64(s.fencedDo(storeNode, l.Fence(), ""))
		if err != nil || v < 0 {
			t.Fatalf("the next holder's read: %d, %v", v, err)
		}
		pv, _ := redis.Int64(s.do(storeNode, "GET", pausePlain))
		if w, err := redis.Int64(s.fencedDo(storeNode, l.Fence(), strconv.FormatInt(v+1, 10))); err != nil || w != v+1 {
			t.Fatalf("the next holder's write: %d, %v", w, err)
		}
		if _, err := s.do(storeNode, "SET", pausePlain, pv+1); err != nil {
			t.Fatal(err)
		}
		increments++
		_ = l.Release(context.Background())

		if err := hp.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if hp.field(t, "WROTE", 1) == "-1" {
			refused++
		} else {
			increments++ // accepted: it must then be counted
		}
		_ = hp.cmd.Wait()
	}
	counter, _ := redis.Int64(s.do(storeNode, "GET", pauseCounter))
	plain, _ := redis.Int64(s.do(storeNode, "GET", pausePlain))
	r := h.figures("11 fencing, holder process SIGSTOPped past its validity", 2)
	r.Note = fmt.Sprintf("%d rounds: %d late writes refused; unfenced copy %d after %d increments (%d lost)",
		rounds, refused, plain, 2*rounds, 2*rounds-int(plain))
	store := &fencedStore{value: counter, writes: int64(increments), rejected: int64(refused)}
	s.finishFenced(t, r, h, store, start)
	if refused != rounds {
		t.Errorf("%d of %d late writes refused", refused, rounds)
	}
	if plain >= 2*rounds {
		t.Errorf("the unfenced copy lost no update (%d after %d increments): the pause did not bite", plain, 2*rounds)
	}
}

// fencedDo runs fencedOp on node i.
func (s *suite) fencedDo(i int, fence int64, value string) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := s.c.Pools()[i].GetContext(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return fencedOp.DoContext(ctx, conn, pauseCounter, pauseLast, fence, value)
}

// holderProc is a running fenced holder process and its output lines.
type holderProc struct {
	cmd   *exec.Cmd
	lines chan string
}

// startFencedHolder starts TestFencedHolderProcess; it is killed at the
// end of the test if still running.
func (s *suite) startFencedHolder(t *testing.T, lock string, storeNode int) *holderProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFencedHolderProcess$")
	cmd.Env = append(os.Environ(), envFencedURLs+"="+strings.Join(s.c.URLs(), ","),
		envFencedLock+"="+lock, envFencedStore+"="+s.c.URLs()[storeNode])
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hp := &holderProc{cmd: cmd, lines: make(chan string, 64)}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		defer close(hp.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case hp.lines <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		<-scanned
	})
	return hp
}

// field waits for the line that starts with tag and returns its field k.
func (hp *holderProc) field(t *testing.T, tag string, k int) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-hp.lines:
			if !ok {
				t.Fatalf("the holder process ended before %s", tag)
			}
			if f := strings.Fields(line); len(f) > k && f[0] == tag {
				return f[k]
			}
		case <-timeout:
			t.Fatalf("no %s from the holder process within 30s", tag)
		}
	}
}
