package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestProfiles: the CPU profile and the heap profile are written, the heap
// one during the run when -memprofile-after falls inside it and at the end
// when the run is shorter.
func TestProfiles(t *testing.T) {
	for _, after := range []time.Duration{0, 20 * time.Millisecond, time.Hour} {
		dir := t.TempDir()
		p := profiles{cpu: filepath.Join(dir, "cpu"), heap: filepath.Join(dir, "heap"), heapAfter: after}
		if err := p.start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		if err := p.stop(); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{p.cpu, p.heap} {
			if st, err := os.Stat(f); err != nil || st.Size() == 0 {
				t.Errorf("after %v: %s not written: %v", after, f, err)
			}
		}
	}
}
