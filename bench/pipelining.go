package main

import "github.com/redlockplus/redlock"

// plainPoolOptions returns the options of the "redlock-plain" target: this
// library on the plain pool path, one pooled connection per command, with
// auto-pipelining off and every other option at its default. ok reports
// whether the target is measured; it was false until WithPipelining landed.
func plainPoolOptions() (opts []redlock.Option, ok bool) {
	return []redlock.Option{redlock.WithPipelining(false)}, true
}
