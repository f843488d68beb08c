package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestProfiles: both profiles are written, for the whole run, for a
// window inside it, and for a window that the run ends before.
func TestProfiles(t *testing.T) {
	for _, w := range []struct{ after, dur time.Duration }{{0, 0}, {20 * time.Millisecond, 0}, {10 * time.Millisecond, 20 * time.Millisecond}, {time.Hour, time.Hour}} {
		dir := t.TempDir()
		p := &profiles{cpu: filepath.Join(dir, "cpu"), heap: filepath.Join(dir, "heap"), after: w.after, dur: w.dur}
		cpu, heap := p.cpu, p.heap
		if err := p.start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if err := p.stop(); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{heap, cpu} {
			if st, err := os.Stat(f); w.after < time.Hour && (err != nil || st.Size() == 0) {
				t.Errorf("window %+v: %s not written: %v", w, f, err)
			}
		}
		if _, err := os.Stat(heap); err != nil {
			t.Errorf("window %+v: no heap profile after a run that ended first: %v", w, err)
		}
	}
}
