package main

import "github.com/redlockplus/redlock"

// plainPoolOptions returns the options of the "redlock-plain" target: this
// library on the plain pool path, one pooled connection per command, with
// auto-pipelining off. ok is false while the library has no such option,
// and the target is then left out.
//
// TODO(issue 5): return []redlock.Option{redlock.WithPipelining(false)}, true
// once redlock.WithPipelining lands.
func plainPoolOptions() (opts []redlock.Option, ok bool) {
	return nil, false
}
