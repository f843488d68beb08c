package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

// profiles writes the -cpuprofile and -memprofile files of a run: the CPU
// profile covers the whole run after the nodes are up; the heap profile,
// after a collection, is taken -memprofile-after into the run (W7's locks
// while they are held, for one), or at its end when that is 0. Its
// alloc_space and alloc_objects samples count every allocation up to then.
type profiles struct {
	cpu, heap string
	heapAfter time.Duration
	cpuFile   *os.File
	heapTimer *time.Timer
	heapErr   chan error
}

// start begins the CPU profile and arranges the heap profile, if they
// were asked for.
func (p *profiles) start() error {
	p.heapLater()
	if p.cpu == "" {
		return nil
	}
	f, err := os.Create(p.cpu)
	if err != nil {
		return fmt.Errorf("bench: -cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("bench: -cpuprofile: %w", err)
	}
	p.cpuFile = f
	return nil
}

// heapLater arranges the heap profile at -memprofile-after.
func (p *profiles) heapLater() {
	if p.heap == "" || p.heapAfter <= 0 {
		return
	}
	p.heapErr = make(chan error, 1)
	p.heapTimer = time.AfterFunc(p.heapAfter, func() { p.heapErr <- p.heapNow() })
}

// heapNow writes the heap profile.
func (p *profiles) heapNow() error {
	f, err := os.Create(p.heap)
	if err != nil {
		return fmt.Errorf("bench: -memprofile: %w", err)
	}
	runtime.GC()
	return errors.Join(pprof.WriteHeapProfile(f), f.Close())
}

// stop ends the CPU profile and writes the heap profile, unless it was
// taken during the run; a run shorter than -memprofile-after takes it now.
func (p *profiles) stop() error {
	var errs []error
	if p.cpuFile != nil {
		pprof.StopCPUProfile()
		errs = append(errs, p.cpuFile.Close())
	}
	switch {
	case p.heap == "":
	case p.heapTimer != nil && !p.heapTimer.Stop():
		errs = append(errs, <-p.heapErr)
	default:
		errs = append(errs, p.heapNow())
	}
	return errors.Join(errs...)
}
