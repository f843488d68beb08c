package sdltest_test

import (
	"context"
	"testing"

	"github.com/redlockplus/redlock/sdlstore/sdltest"
)

// An xApp's unit test on an embedded SDL: no Redis server needed. In a
// _test.go file this is func TestCellConfig(t *testing.T).
func ExampleNew() {
	var t *testing.T // the *testing.T of the test function

	sdl := sdltest.New(t, 1)
	ctx := context.Background()
	if err := sdl.Set(ctx, "my-xapp", map[string][]byte{"cell-1": []byte("on")}); err != nil {
		t.Fatal(err)
	}
	got, err := sdl.Get(ctx, "my-xapp", "cell-1")
	if err != nil || string(got["cell-1"]) != "on" {
		t.Fatalf("Get = %q, %v", got, err)
	}
}
