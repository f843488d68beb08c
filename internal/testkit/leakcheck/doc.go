// Package leakcheck finds goroutines that a test binary left running.
//
// It serves the tests of the root module, whose go.mod may name no module
// but redigo: a test dependency there would enter the module graph
// of every program that imports the lock. The other modules of the
// repository use go.uber.org/goleak.
package leakcheck
