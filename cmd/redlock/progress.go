package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progressBar draws a time-based progress bar on a terminal, redrawn in
// place, or prints one line per step elsewhere.
type progressBar struct {
	w     io.Writer
	tty   bool
	total time.Duration // expected time of all steps

	mu    sync.Mutex
	done  time.Duration // expected time of the finished steps
	step  string
	start time.Time // of the current step
	span  time.Duration
	stop  chan struct{}
	wg    sync.WaitGroup
}

const barWidth = 30

func newProgressBar(w io.Writer, total time.Duration) *progressBar {
	return &progressBar{w: w, tty: newStyle(w).on, total: total}
}

// begin starts a step expected to take span.
func (p *progressBar) begin(step string, span time.Duration) {
	p.mu.Lock()
	p.step, p.start, p.span = step, time.Now(), span
	p.mu.Unlock()
	if !p.tty {
		fmt.Fprintf(p.w, "running %s (%v)\n", step, span)
		return
	}
	p.stop = make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			p.draw()
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// end finishes the current step.
func (p *progressBar) end() {
	if p.stop != nil {
		close(p.stop)
		p.wg.Wait()
		p.stop = nil
	}
	p.mu.Lock()
	p.done += p.span
	p.mu.Unlock()
	if p.tty {
		p.draw()
	}
}

// finish clears the bar.
func (p *progressBar) finish() {
	if p.tty {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", barWidth+60))
	}
}

func (p *progressBar) draw() {
	p.mu.Lock()
	elapsed := p.done + min(time.Since(p.start), p.span)
	step := p.step
	p.mu.Unlock()
	frac := 1.0
	if p.total > 0 {
		frac = min(float64(elapsed)/float64(p.total), 1)
	}
	full := int(frac * barWidth)
	bar := strings.Repeat("█", full) + strings.Repeat("░", barWidth-full)
	line := fmt.Sprintf("%s %3.0f%%  %s", bar, frac*100, step)
	fmt.Fprintf(p.w, "\r%-*s", barWidth+50, line)
}
