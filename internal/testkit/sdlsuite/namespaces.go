package sdlsuite

import (
	"slices"
	"testing"
	"time"

	"github.com/redlockplus/redlock/sdlstore"
)

func init() {
	cases = append(cases, testCase{name: "Namespaces", instances: both, run: testNamespaces})
}

// Namespaces lists each namespace with its instance and key count, and
// skips keys that are not in the "{ns},key" form.
func testNamespaces(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	got, err := s.Namespaces(c)
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("Namespaces of empty instances = %+v", got)
	}
	must(t, s.Set(c, "alpha", map[string][]byte{"a": {}, "b": {}, "c": {}}))
	must(t, s.AddMember(c, "alpha", "group", []byte("m")))
	must(t, s.Set(c, "beta", map[string][]byte{"x": {}}))
	l, err := s.LockResource("gamma", "res", 10*time.Second)
	must(t, err)
	if ok, err := l.Acquire(c, 0, 0); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	// Keys of no namespace: plain, unterminated, and with an illegal name.
	e.do(0, "MSET", "plain", "v", "{open", "v", "{a{b},k", "v", "{},k", "v")
	got, err = s.Namespaces(c)
	must(t, err)
	got = e.withoutAddrs(got)
	want := []sdlstore.NamespaceInfo{
		{Name: "alpha", Instance: e.home("alpha"), Keys: 4},
		{Name: "beta", Instance: e.home("beta"), Keys: 1},
		{Name: "gamma", Instance: e.home("gamma"), Keys: 1},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Namespaces = %+v, want %+v", got, want)
	}
	// Keys found off their home instance are reported where they are.
	stray := (e.home("beta") + 1) % len(e.addrs)
	if stray != e.home("beta") {
		e.do(stray, "SET", "{beta},lost", "v")
		got, err = s.Namespaces(c)
		must(t, err)
		got = e.withoutAddrs(got)
		if !slices.Contains(got, sdlstore.NamespaceInfo{Name: "beta", Instance: stray, Keys: 1}) || len(got) != 4 {
			t.Fatalf("Namespaces with a stray key = %+v", got)
		}
	}
}

// withoutAddrs checks that each entry names its instance's address, or
// none (a pool that does not know it), and clears it for comparison.
func (e *env) withoutAddrs(list []sdlstore.NamespaceInfo) []sdlstore.NamespaceInfo {
	e.t.Helper()
	for i, ni := range list {
		if ni.Addr != "" && ni.Addr != e.addrs[ni.Instance] {
			e.t.Fatalf("namespace %q on instance %d: address %q, want %q", ni.Name, ni.Instance, ni.Addr, e.addrs[ni.Instance])
		}
		list[i].Addr = ""
	}
	return list
}
