package sdlsuite

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"testing"

	"github.com/gomodule/redigo/redis"
)

func init() {
	cases = append(cases, []testCase{
		{name: "SetGetRemove", instances: both, run: testSetGetRemove},
		{name: "ConditionalOps", instances: both, run: testConditionalOps},
		{name: "ConditionalOpsCompareNULBytes", instances: []int{1}, run: testConditionalOpsCompareNULBytes},
		{name: "FindKeysAndRemoveAll", instances: both, run: testFindKeysAndRemoveAll},
		{name: "NamespaceGlobEscaping", instances: []int{1}, run: testNamespaceGlobEscaping},
		{name: "Groups", instances: both, run: testGroups},
		{name: "NamespaceDistribution", instances: []int{3}, run: testNamespaceDistribution},
	}...)
}

func testSetGetRemove(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	data := map[string][]byte{"a": []byte("1"), "b": {0, 1, 0}, "empty": {}, "with,comma": []byte("x")}
	must(t, s.Set(c, "ns1", data))
	got, err := s.Get(c, "ns1", "a", "b", "empty", "with,comma", "missing")
	must(t, err)
	if !maps.EqualFunc(got, data, bytes.Equal) {
		t.Fatalf("Get = %q, want %q", got, data)
	}
	// Another namespace does not see them.
	got, err = s.Get(c, "ns2", "a")
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("ns2 sees %q", got)
	}
	must(t, s.Remove(c, "ns1", "a", "missing"))
	got, _ = s.Get(c, "ns1", "a", "b")
	if _, ok := got["a"]; ok || len(got) != 1 {
		t.Fatalf("after Remove: %q", got)
	}
}

func testConditionalOps(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	ok, err := s.SetIfNotExists(c, "ns", "k", []byte("v1"))
	must(t, err)
	if !ok {
		t.Fatal("SetIfNotExists on a new key failed")
	}
	if ok, _ = s.SetIfNotExists(c, "ns", "k", []byte("v2")); ok {
		t.Fatal("SetIfNotExists overwrote")
	}
	if ok, _ = s.SetIf(c, "ns", "k", []byte("wrong"), []byte("v2")); ok {
		t.Fatal("SetIf with a wrong old value wrote")
	}
	if ok, _ = s.SetIf(c, "ns", "missing", []byte(""), []byte("v2")); ok {
		t.Fatal("SetIf on a missing key wrote")
	}
	if ok, err = s.SetIf(c, "ns", "k", []byte("v1"), []byte("v2")); err != nil || !ok {
		t.Fatalf("SetIf = %v, %v", ok, err)
	}
	if ok, _ = s.RemoveIf(c, "ns", "k", []byte("v1")); ok {
		t.Fatal("RemoveIf with a wrong value removed")
	}
	if ok, err = s.RemoveIf(c, "ns", "k", []byte("v2")); err != nil || !ok {
		t.Fatalf("RemoveIf = %v, %v", ok, err)
	}
	if got, _ := s.Get(c, "ns", "k"); len(got) != 0 {
		t.Fatalf("key survived RemoveIf: %q", got)
	}
}

// The comparison is byte-exact: values that agree up to a NUL byte, or
// differ in length only, do not match (the DBaaS module used strncmp).
func testConditionalOpsCompareNULBytes(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	stored := []byte("abc\x00def")
	must(t, s.Set(c, "ns", map[string][]byte{"k": stored}))
	for _, old := range [][]byte{[]byte("abc"), []byte("abc\x00xyz"), []byte("abc\x00de"), []byte("abc\x00def\x00")} {
		if ok, err := s.SetIf(c, "ns", "k", old, []byte("new")); ok || err != nil {
			t.Fatalf("SetIf(old=%q) = %v, %v; want false", old, ok, err)
		}
		if ok, err := s.RemoveIf(c, "ns", "k", old); ok || err != nil {
			t.Fatalf("RemoveIf(%q) = %v, %v; want false", old, ok, err)
		}
	}
	if ok, err := s.SetIf(c, "ns", "k", stored, []byte("new\x00")); !ok || err != nil {
		t.Fatalf("SetIf(exact) = %v, %v", ok, err)
	}
	if ok, err := s.RemoveIf(c, "ns", "k", []byte("new\x00")); !ok || err != nil {
		t.Fatalf("RemoveIf(exact) = %v, %v", ok, err)
	}
}

func testFindKeysAndRemoveAll(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	must(t, s.Set(c, "app", map[string][]byte{"user:1": []byte("a"), "user:2": []byte("b"), "cfg": []byte("c")}))
	must(t, s.AddMember(c, "app", "user:group", []byte("m")))
	must(t, s.Set(c, "app2", map[string][]byte{"user:3": []byte("x")}))
	keys, err := s.FindKeys(c, "app", "user:*")
	must(t, err)
	if want := []string{"user:1", "user:2", "user:group"}; !slices.Equal(keys, want) {
		t.Fatalf("FindKeys = %q, want %q", keys, want)
	}
	keys, _ = s.FindKeys(c, "app", "user:[12]")
	if want := []string{"user:1", "user:2"}; !slices.Equal(keys, want) {
		t.Fatalf("FindKeys([12]) = %q, want %q", keys, want)
	}
	if keys, _ = s.FindKeys(c, "app", "nothing*"); keys == nil || len(keys) != 0 {
		t.Fatalf("FindKeys(no match) = %#v, want empty", keys)
	}
	got, err := s.FindAndGet(c, "app", "*")
	must(t, err)
	want := map[string][]byte{"user:1": []byte("a"), "user:2": []byte("b"), "cfg": []byte("c")}
	if !maps.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("FindAndGet = %q, want %q (groups left out)", got, want)
	}
	must(t, s.RemoveAll(c, "app"))
	if keys, _ = s.FindKeys(c, "app", "*"); len(keys) != 0 {
		t.Fatalf("after RemoveAll: %q", keys)
	}
	if got, _ := s.Get(c, "app2", "user:3"); len(got) != 1 {
		t.Fatal("RemoveAll touched another namespace")
	}
}

// Glob characters in a namespace are escaped: FindKeys and RemoveAll of
// "a*" never reach "ab", and so on. One instance, so they all share a DB.
func testNamespaceGlobEscaping(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	namespaces := []string{"a*", "ab", "a?", "ax", "a[b]", "a\\", "a\\b", "[", "]", "*", "?"}
	for _, ns := range namespaces {
		must(t, s.Set(c, ns, map[string][]byte{"k": []byte(ns)}))
	}
	for _, ns := range namespaces {
		got, err := s.FindAndGet(c, ns, "*")
		must(t, err)
		if len(got) != 1 || string(got["k"]) != ns {
			t.Fatalf("FindAndGet(%q) = %q", ns, got)
		}
	}
	must(t, s.RemoveAll(c, "a*"))
	must(t, s.RemoveAll(c, "*"))
	n, _ := redis.Int(e.do(0, "DBSIZE"), nil)
	if n != len(namespaces)-2 {
		t.Fatalf("DBSIZE after two RemoveAll = %d, want %d", n, len(namespaces)-2)
	}
}

func testGroups(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	must(t, s.AddMember(c, "ns", "g", []byte("b"), []byte("a"), []byte{0, 1}, []byte("a")))
	ms, err := s.GetMembers(c, "ns", "g")
	must(t, err)
	if want := [][]byte{{0, 1}, []byte("a"), []byte("b")}; !slices.EqualFunc(ms, want, bytes.Equal) {
		t.Fatalf("GetMembers = %q, want %q", ms, want)
	}
	if n, err := s.GroupSize(c, "ns", "g"); n != 3 || err != nil {
		t.Fatalf("GroupSize = %d, %v", n, err)
	}
	if ok, _ := s.IsMember(c, "ns", "g", []byte{0, 1}); !ok {
		t.Fatal("IsMember(0 1) = false")
	}
	if ok, _ := s.IsMember(c, "ns", "g", []byte{0}); ok {
		t.Fatal("IsMember(0) = true")
	}
	must(t, s.RemoveMember(c, "ns", "g", []byte("a"), []byte("zz")))
	if n, _ := s.GroupSize(c, "ns", "g"); n != 2 {
		t.Fatalf("GroupSize after RemoveMember = %d", n)
	}
	must(t, s.RemoveGroup(c, "ns", "g"))
	if ms, err := s.GetMembers(c, "ns", "g"); len(ms) != 0 || err != nil || ms == nil {
		t.Fatalf("GetMembers of removed group = %#v, %v", ms, err)
	}
	if n, _ := s.GroupSize(c, "ns", "missing"); n != 0 {
		t.Fatalf("GroupSize(missing) = %d", n)
	}
}

// Namespaces land on instance crc32(ns) % 3, verified on the raw servers.
func testNamespaceDistribution(t *testing.T, e *env) {
	c, s := ctx(t), e.s
	used := map[int]bool{}
	for i := 0; i < 30; i++ {
		ns := fmt.Sprintf("namespace-%d", i)
		want := int(crc32.ChecksumIEEE([]byte(ns)) % 3)
		if got := s.InstanceIndex(ns); got != want {
			t.Fatalf("InstanceIndex(%q) = %d, want %d", ns, got, want)
		}
		used[want] = true
		must(t, s.Set(c, ns, map[string][]byte{"k": []byte(ns)}))
		must(t, s.AddMember(c, ns, "g", []byte("m")))
		for j := range e.addrs {
			exists, _ := redis.Int(e.do(j, "EXISTS", "{"+ns+"},k", "{"+ns+"},g"), nil)
			if (j == want) != (exists == 2) {
				t.Fatalf("namespace %q: instance %d has %d of its keys (want instance %d)", ns, j, exists, want)
			}
		}
	}
	if len(used) != 3 {
		t.Fatalf("30 namespaces used only instances %v", used)
	}
}
