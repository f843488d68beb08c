package redlock_test

import (
	"context"
	"fmt"
	"log"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
)

// fencedWrite is the resource's side of fencing, in Redis: write iff the
// caller's token is above the last one the resource accepted. KEYS[1] the
// data, KEYS[2] the last token; ARGV[1] the token, ARGV[2] the value.
// Returns 1 if written, 0 if the token is stale. Tokens stay below 2^53,
// so Lua's numbers compare them exactly.
var fencedWrite = redis.NewScript(2, `
local last = tonumber(redis.call("GET", KEYS[2]) or "0")
if tonumber(ARGV[1]) <= last then
	return 0
end
redis.call("SET", KEYS[2], ARGV[1])
redis.call("SET", KEYS[1], ARGV[2])
return 1`)

// The same check in SQL, for a table with a fence column:
//
//	UPDATE reports SET body = $2, fence = $3 WHERE id = $1 AND fence < $3
//
// zero rows updated means the token is stale.
func ExampleLock_Fence() {
	f, err := redlock.NewFactoryFromURLs(nodeURLs, redlock.WithFencing(true))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	store, err := redis.Dial("tcp", nodeURLs[0][len("redis://"):]) // the protected resource
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	// write stores value in the resource if fence is not stale.
	write := func(fence int64, value string) bool {
		ok, err := redis.Bool(fencedWrite.Do(store, "report", "report:fence", fence, value))
		if err != nil {
			log.Fatal(err)
		}
		return ok
	}
	first, second := f.NewLock("report-writer"), f.NewLock("report-writer")
	if _, err := first.Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	stale := first.Fence() // the first holder stalls here, past its validity,
	first.Release(ctx)     // and loses the lock

	if _, err := second.Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("second holder's write:", write(second.Fence(), "v2"))
	second.Release(ctx)

	// The first holder resumes with its old token: the resource refuses it.
	fmt.Println("first holder's late write:", write(stale, "v1"))
	// Output:
	// second holder's write: true
	// first holder's late write: false
}
