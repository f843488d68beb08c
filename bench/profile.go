package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

// profiles writes the -cpuprofile and -memprofile files of a run. By
// default the CPU profile covers the whole run after the nodes are up and
// the heap profile is taken at its end. With -profile-after T the heap
// profile is taken T into the run (W7's locks while they are held, for
// one) and the CPU profile starts then; -profile-for D ends it D later, so
// that it covers a stretch of the hold without the acquisitions before or
// the releases after. The heap profile follows a collection; its
// alloc_space and alloc_objects samples count every allocation up to then.
type profiles struct {
	cpu, heap  string
	after, dur time.Duration

	mu      sync.Mutex
	cpuFile *os.File
	heapOK  bool // the heap profile was written
	timers  []*time.Timer
	errs    []error
}

// start arranges the profiles that were asked for.
func (p *profiles) start() error {
	if p.after <= 0 {
		return p.startCPU()
	}
	p.later(p.after, func() error {
		return errors.Join(p.writeHeap(), p.startCPU())
	})
	if p.dur > 0 {
		p.later(p.after+p.dur, p.stopCPU)
	}
	return nil
}

// later runs fn at d into the run, keeping its error for stop.
func (p *profiles) later(d time.Duration, fn func() error) {
	p.timers = append(p.timers, time.AfterFunc(d, func() {
		err := fn()
		p.mu.Lock()
		p.errs = append(p.errs, err)
		p.mu.Unlock()
	}))
}

// stop ends the CPU profile and writes the heap profile if the run ended
// before they were due.
func (p *profiles) stop() error {
	for _, t := range p.timers {
		t.Stop() // a timer that already fired has done its work
	}
	errs := []error{p.stopCPU(), p.writeHeap()}
	p.mu.Lock()
	defer p.mu.Unlock()
	return errors.Join(append(errs, p.errs...)...)
}

func (p *profiles) startCPU() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cpu == "" || p.cpuFile != nil {
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

func (p *profiles) stopCPU() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cpuFile == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := p.cpuFile.Close()
	p.cpuFile = nil
	p.cpu = "" // written: a later start does not overwrite it
	return err
}

// writeHeap writes the heap profile once.
func (p *profiles) writeHeap() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.heap == "" || p.heapOK {
		return nil
	}
	p.heapOK = true
	f, err := os.Create(p.heap)
	if err != nil {
		return fmt.Errorf("bench: -memprofile: %w", err)
	}
	runtime.GC()
	return errors.Join(pprof.WriteHeapProfile(f), f.Close())
}
