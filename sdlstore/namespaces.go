package sdlstore

import (
	"cmp"
	"context"
	"slices"
	"strings"
)

// NamespaceInfo is one namespace found on one instance.
type NamespaceInfo struct {
	// Name is the namespace.
	Name string `json:"namespace"`
	// Instance is the index of the instance its keys were found on. It is
	// the namespace's home instance unless the keys were written with
	// another instance count.
	Instance int `json:"instance"`
	// Addr is the instance's host:port, "" when its pool does not know it.
	Addr string `json:"addr,omitempty"`
	// Keys counts its keys (data keys, groups and held locks) there.
	Keys int64 `json:"keys"`
}

// Namespaces walks every instance with SCAN, as sdlcli's namespaces does,
// and returns each namespace that has at least one key, with the instance
// and the number of keys, sorted by name and instance. Keys not in the
// "{ns},key" form are skipped. It reads a consistent count only when no
// one writes meanwhile.
func (s *Store) Namespaces(ctx context.Context) ([]NamespaceInfo, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	var out []NamespaceInfo
	for _, in := range s.insts {
		counts := map[string]int64{}
		err := s.scanMatch(ctx, in, "", "namespaces", "{*},*", func(raw []string) error {
			for _, k := range raw {
				if ns, ok := namespaceOf(k); ok {
					counts[ns]++
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for ns, n := range counts {
			out = append(out, NamespaceInfo{Name: ns, Instance: in.index, Addr: in.addr(), Keys: n})
		}
	}
	slices.SortFunc(out, func(a, b NamespaceInfo) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.Instance, b.Instance))
	})
	return out, nil
}

// namespaceOf returns the namespace of a Redis key "{ns},key": the text
// between the leading '{' and the first "},", which must be a valid
// namespace.
func namespaceOf(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, "{")
	if !ok {
		return "", false
	}
	ns, _, ok := strings.Cut(rest, "},")
	if !ok || checkNamespace(ns) != nil {
		return "", false
	}
	return ns, true
}
