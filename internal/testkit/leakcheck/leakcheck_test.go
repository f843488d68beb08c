package leakcheck

import (
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { VerifyTestMain(m, nil) }

// parked is a function name that shows in the stack of the goroutine that
// TestFindReportsARunningGoroutine leaves blocked.
func parked(stop <-chan struct{}) { <-stop }

func TestFindReportsARunningGoroutine(t *testing.T) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		parked(stop)
	}()
	err := Find(50 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "leakcheck.parked(") {
		t.Fatalf("Find with a goroutine blocked in parked: got %v, want its stack", err)
	}
	close(stop)
	<-done
	if err := Find(time.Second); err != nil {
		t.Fatalf("Find after the goroutine ended: %v", err)
	}
}

func TestFindWaitsForAGoroutineThatIsEnding(t *testing.T) {
	go time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := Find(5 * time.Second); err != nil {
		t.Fatalf("Find: %v", err)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Fatalf("Find returned after %v, before the sleeping goroutine could end", waited)
	}
}

func TestTopFunction(t *testing.T) {
	for _, tc := range []struct{ frames, want string }{
		{"testing.(*T).Run(0xc000102000, {0x5a1b2c, 0x4}, 0x5b0c18)\n\t/go/src/testing/testing.go:1750 +0x3ab", "testing.(*T).Run"},
		{"os/signal.signal_recv()\n\t/go/src/runtime/sigqueue.go:152 +0x29", "os/signal.signal_recv"},
		{"main.main.func1(...)", "main.main.func1"},
	} {
		if got := topFunction(tc.frames); got != tc.want {
			t.Errorf("topFunction(%q) = %q, want %q", tc.frames, got, tc.want)
		}
	}
}

func TestFindNewIgnoresEarlierGoroutines(t *testing.T) {
	old := make(chan struct{})
	go parked(old)
	defer close(old)
	before := Current()
	if err := FindNew(before, 10*time.Millisecond); err != nil {
		t.Fatalf("FindNew reports a goroutine that ran before: %v", err)
	}
	young := make(chan struct{})
	go parked(young)
	err := FindNew(before, 10*time.Millisecond)
	close(young)
	if err == nil || !strings.Contains(err.Error(), "leakcheck.parked") {
		t.Fatalf("FindNew = %v, want the new goroutine reported", err)
	}
}
