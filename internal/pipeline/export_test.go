package pipeline

// WaitIdle waits until no goroutine holds p's writer role, so that a test
// can tell which goroutine writes its next call.
func WaitIdle(p *Conn) {
	p.mu.Lock()
	for p.writing {
		p.idle.Wait()
	}
	p.mu.Unlock()
}
