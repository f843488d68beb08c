// Package sdltest is a test double for sdlstore: New returns a real
// *sdlstore.Store over Redis servers embedded in the test process
// (github.com/alicebob/miniredis), so an xApp's unit tests need no Redis
// installation, as ricsdl's fake_db_backend='dict' and xapp-frame-py's
// use_fake_sdl allow.
//
//	func TestMyXApp(t *testing.T) {
//		sdl := sdltest.New(t, 1)
//		app := myxapp.New(sdl)
//		...
//	}
//
// Every sdlstore operation runs on it unchanged: data and groups, the Lua
// scripts of the conditional and publishing operations, notifications in
// both delivery modes, and locks. The sdlstore test suite runs on it as well
// as on redis-server (see this module's tests).
//
// # Where the embedded server differs from Redis
//
//   - It is not Redis but a Go reimplementation of its commands, run in the
//     test process: its timing and memory use say nothing about a real
//     deployment.
//   - INFO has only its clients and stats sections, and there is no ROLE,
//     no SENTINEL and no DBaaS module, so the redlock CLI's healthcheck and
//     statistics commands report little about it.
//   - Keys expire on the wall clock, as on Redis; TTLs advance whenever the
//     server is accessed, so an expired key is gone for every command.
//   - Lua scripts run on gopher-lua (Lua 5.1, as in Redis) and can call the
//     commands the embedded server implements, which covers every script of
//     sdlstore.
//   - There are no faults: no restart, failover, slow or lost replies. For
//     tests of those, use real servers (redlocktest.Start starts them and
//     injects faults).
//
// The servers, the Store and its pools are closed when the test ends.
package sdltest
