package sdlsuite

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockplus/redlock/sdlstore"
)

// writers is how many goroutines race in the atomicity tests.
const writers = 32

func init() {
	cases = append(cases, []testCase{
		{name: "AtomicCompareAndSetUnderContention", instances: both, run: testAtomicCompareAndSetUnderContention},
		{name: "AtomicSingleWinner", instances: []int{1}, run: testAtomicSingleWinner},
	}...)
}

// 32 writers increment one counter with Get + SetIfAndPublish: no update is
// lost, and exactly one notification goes out per successful write.
func testAtomicCompareAndSetUnderContention(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	const perWriter = 10
	recv := e.rawSubscriber(e.home("cnt"), "{cnt},changes")
	must(t, s.Set(c, "cnt", map[string][]byte{"n": []byte("0")}))
	var wg sync.WaitGroup
	var failures atomic.Int64
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < perWriter; {
				m, err := s.Get(c, "cnt", "n")
				if err != nil {
					failures.Add(1)
					return
				}
				n, _ := strconv.Atoi(string(m["n"]))
				next := []byte(strconv.Itoa(n + 1))
				ok, err := s.SetIfAndPublish(c, "cnt", sdlstore.ChannelEvents{"changes": {string(next)}}, "n", m["n"], next)
				if err != nil {
					failures.Add(1)
					return
				}
				if ok {
					done++
				}
			}
		}()
	}
	wg.Wait()
	if failures.Load() != 0 {
		t.Fatalf("%d writers failed", failures.Load())
	}
	m, _ := s.Get(c, "cnt", "n")
	if string(m["n"]) != strconv.Itoa(writers*perWriter) {
		t.Fatalf("counter = %s, want %d", m["n"], writers*perWriter)
	}
	// Notifications: exactly one per increment, in increment order.
	for i := 1; i <= writers*perWriter; i++ {
		msg, ok := recv(5 * time.Second)
		if !ok || string(msg.Data) != strconv.Itoa(i) {
			t.Fatalf("notification %d = %q (%v)", i, msg.Data, ok)
		}
	}
	must(t, s.SetAndPublish(c, "cnt", sdlstore.ChannelEvents{"changes": {"marker"}}, map[string][]byte{"x": {}}))
	if msg, _ := recv(5 * time.Second); string(msg.Data) != "marker" {
		t.Fatalf("extra notification %q", msg.Data)
	}
}

// Of 32 writers racing on SetIfNotExistsAndPublish, and then on
// RemoveIfAndPublish, exactly one wins each round and publishes.
func testAtomicSingleWinner(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	recv := e.rawSubscriber(0, "{race},ev")
	for round := 0; round < 5; round++ {
		val := []byte(fmt.Sprintf("round%d", round))
		set := race(func() bool {
			ok, err := s.SetIfNotExistsAndPublish(c, "race", sdlstore.ChannelEvents{"ev": {"set"}}, "k", val)
			return ok && err == nil
		})
		removed := race(func() bool {
			ok, err := s.RemoveIfAndPublish(c, "race", sdlstore.ChannelEvents{"ev": {"removed"}}, "k", val)
			return ok && err == nil
		})
		if set != 1 || removed != 1 {
			t.Fatalf("round %d: %d set winners, %d remove winners; want 1 and 1", round, set, removed)
		}
		for _, want := range []string{"set", "removed"} {
			if msg, ok := recv(5 * time.Second); !ok || string(msg.Data) != want {
				t.Fatalf("round %d: notification %q (%v), want %q", round, msg.Data, ok, want)
			}
		}
	}
}

// race runs try on writers goroutines released at once, waits for them,
// and returns how many of them it returned true on.
func race(try func() bool) int64 {
	var wins atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if try() {
				wins.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	return wins.Load()
}
