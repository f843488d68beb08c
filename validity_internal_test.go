package redlock

import (
	"strconv"
	"testing"
	"time"
)

func TestDriftAndValidityArithmetic(t *testing.T) {
	cases := []struct {
		ttl     time.Duration
		factor  float64
		elapsed time.Duration
		drift   time.Duration
		valid   time.Duration
	}{
		{10 * time.Second, 0.01, 50 * time.Millisecond, 102 * time.Millisecond, 9848 * time.Millisecond},
		{120 * time.Second, 0.01, 0, 1202 * time.Millisecond, 118798 * time.Millisecond},
		{time.Second, 0, 10 * time.Millisecond, 2 * time.Millisecond, 988 * time.Millisecond},
		{100 * time.Millisecond, 0.5, 48 * time.Millisecond, 52 * time.Millisecond, 0},
	}
	for _, c := range cases {
		l := &Lock{lockShape: &lockShape{cfg: defaultConfig().apply([]Option{WithTTL(c.ttl), WithDriftFactor(c.factor)})}}
		if got := l.cfg.drift(); got != c.drift {
			t.Errorf("ttl %v factor %v: drift %v, want %v", c.ttl, c.factor, got, c.drift)
		}
		start := time.Now()
		r := round{start: start, decided: start.Add(c.elapsed)}
		if got := l.cfg.validity(&r); got != c.valid {
			t.Errorf("ttl %v factor %v elapsed %v: validity %v, want %v", c.ttl, c.factor, c.elapsed, got, c.valid)
		}
	}
}

func TestDefaultsAndDerivedOptions(t *testing.T) {
	c := defaultConfig()
	if err := c.validate(5); err != nil {
		t.Fatal(err)
	}
	if c.ttl != 120*time.Second || c.retryTimes != 3 || c.retryDelay != 200*time.Millisecond || c.driftFactor != 0.01 {
		t.Fatalf("defaults %+v differ from redlock_plus's", c)
	}
	if c.quorum != 3 {
		t.Fatalf("default quorum for 5 nodes = %d, want 3", c.quorum)
	}
	if c.nodeTimeout != time.Second {
		t.Fatalf("default node timeout for a 120s ttl = %v, want 1s", c.nodeTimeout)
	}
	small := defaultConfig().apply([]Option{WithTTL(20 * time.Millisecond)})
	if err := small.validate(3); err != nil {
		t.Fatal(err)
	}
	if small.nodeTimeout != 10*time.Millisecond || small.quorum != 2 {
		t.Fatalf("ttl 20ms: node timeout %v quorum %d, want 10ms and 2", small.nodeTimeout, small.quorum)
	}
}

func TestQuorumValidity(t *testing.T) {
	times := []time.Duration{5 * time.Second, 0, 3 * time.Second, 4 * time.Second, 1 * time.Second}
	if got := quorumValidity(times, 3); got != 3*time.Second {
		t.Fatalf("quorum validity = %v, want the 3rd largest 3s", got)
	}
}

func TestNewTokenIsACanonicalInteger(t *testing.T) {
	seen := make(map[string]bool)
	for range 1000 {
		tok := newToken()
		v, err := strconv.ParseInt(tok, 10, 64)
		if err != nil || v < 0 || strconv.FormatInt(v, 10) != tok {
			t.Fatalf("token %q is not a canonical non-negative int64: %v", tok, err)
		}
		if seen[tok] {
			t.Fatalf("token %q drawn twice in 1000", tok)
		}
		seen[tok] = true
	}
}
