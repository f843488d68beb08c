package main

import (
	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/benchkit"
)

// featureTargets are this library with its optional per-cycle features
// turned off, beside the default redlock on W2: what each costs the client
// per lock cycle, which E1 of issue 23 weighs. "redlock-unguarded" has no
// node guard (no TIME behind a batch of votes, no vote judged),
// "redlock-unwoken" no release wake-ups, and "redlock-lean" none of these
// and no loss detection either ("redlock-untracked" is loss detection
// alone off, lossDetectionTargets), so that only the quorum's rounds, the
// holding and its expiry are left.
func featureTargets() []target {
	unguarded := []redlock.Option{redlock.WithRestartGuard(0), redlock.WithClockGuard(0)}
	unwoken := []redlock.Option{redlock.WithWakeups(false)}
	lean := append([]redlock.Option{redlock.WithLossDetection(false)}, append(unwoken, unguarded...)...)
	variant := func(name string, opts []redlock.Option) target {
		return target{
			name: name,
			build: func(_ []string, ps []*redis.Pool, _ benchkit.Workload) (benchkit.Target, error) {
				return benchkit.Ours(name, lockPools(ps), opts...)
			},
			runs: isW2,
		}
	}
	return []target{variant("redlock-unguarded", unguarded), variant("redlock-unwoken", unwoken), variant("redlock-lean", lean)}
}

// isW2 reports whether w is W2, the contended cycle on distinct keys.
func isW2(w benchkit.Workload) bool { return w.Goal() == "W2" && !w.SharedKey }
