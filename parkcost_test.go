package redlock

import (
	"fmt"
	"testing"
)

// BenchmarkParkedSelect measures what each live channel adds to a select
// that parks and is woken, as a round's wait does once or twice a lock
// cycle: the parked goroutine locks, queues on and later dequeues from
// every channel of the select. It is why a round on the factory's clock
// selects on its wake and its generation, and looks at the owner's dying
// only when the generation closes (fanout.wait, BENCHMARKS.md step 20).
func BenchmarkParkedSelect(b *testing.B) {
	for live := 1; live <= 3; live++ {
		b.Run(fmt.Sprintf("channels=%d", live), func(b *testing.B) {
			wake, ask := make(chan struct{}, 1), make(chan struct{}, 1)
			var tick, dying chan struct{} // nil: not selected on
			if live >= 2 {
				tick = make(chan struct{})
			}
			if live >= 3 {
				dying = make(chan struct{})
			}
			go func() {
				for range ask {
					wake <- struct{}{}
				}
			}()
			defer close(ask)
			for b.Loop() {
				ask <- struct{}{}
				select {
				case <-wake:
				case <-tick:
				case <-dying:
				}
			}
		})
	}
}
