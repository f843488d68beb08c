package redlock_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

func TestRWLockInvalidArguments(t *testing.T) {
	_, f := factory(t)
	ctx := ctxT(t, 5*time.Second)
	if _, err := f.NewReadLock("").Acquire(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("ReadLock of an empty name: %v, want ErrInvalidArgument", err)
	}
	if _, err := f.NewWriteLock("").Acquire(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("WriteLock of an empty name: %v, want ErrInvalidArgument", err)
	}
	if _, err := f.NewReadLock("x", redlock.WithFencing(true)).Acquire(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("fenced ReadLock: %v, want ErrInvalidArgument", err)
	}
	if _, err := f.NewWriteLock("x", redlock.WithFencing(true)).Acquire(ctx); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("fenced WriteLock: %v, want ErrInvalidArgument", err)
	}
}

// TestRWLockSharing: readers share, a writer waits for them, readers wait
// for the writer, and a plain Lock of the name is another key.
func TestRWLockSharing(t *testing.T) {
	_, f := factory(t, redlock.WithRetryTimes(0))
	ctx := ctxT(t, 10*time.Second)
	readers := []*redlock.ReadLock{f.NewReadLock("doc"), f.NewReadLock("doc"), f.NewReadLock("doc")}
	for i, r := range readers {
		if _, err := r.TryAcquire(ctx); err != nil {
			t.Fatalf("reader %d: %v", i, err)
		}
	}
	w := f.NewWriteLock("doc")
	if _, err := w.TryAcquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("writer with readers in: %v, want ErrNotAcquired", err)
	}
	for _, r := range readers {
		if err := r.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.TryAcquire(ctx); err != nil {
		t.Fatalf("writer once readers left: %v", err)
	}
	if _, err := f.NewReadLock("doc").TryAcquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("reader with a writer in: %v, want ErrNotAcquired", err)
	}
	if _, err := f.NewWriteLock("doc").TryAcquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("second writer: %v, want ErrNotAcquired", err)
	}
	plain := f.NewLock("doc")
	if _, err := plain.TryAcquire(ctx); err != nil {
		t.Fatalf("a plain Lock of the name is another key, as documented: %v", err)
	}
	plain.Release(ctx)
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := f.NewReadLock("doc")
	if _, err := r.TryAcquire(ctx); err != nil {
		t.Fatalf("reader after the writer left: %v", err)
	}
	r.Release(ctx)
}

// TestRWLockReaderWokenByWriter: a blocked reader wakes on the writer's
// release, though its retry delay is a minute.
func TestRWLockReaderWokenByWriter(t *testing.T) {
	_, f := factory(t, redlock.WithRetryDelay(time.Minute))
	ctx := ctxT(t, 20*time.Second)
	w := f.NewWriteLock("page")
	if _, err := w.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	r := f.NewReadLock("page")
	got := make(chan error, 1)
	go func() {
		_, err := r.Acquire(ctx)
		got <- err
	}()
	time.Sleep(300 * time.Millisecond)
	w.Release(ctx)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reader was not woken by the writer's release")
	}
	r.Release(ctx)
}

// TestRWLockWriterWokenByReader: a blocked writer wakes on the last
// reader's Release, though its retry delay is a minute.
func TestRWLockWriterWokenByReader(t *testing.T) {
	_, f := factory(t, redlock.WithRetryDelay(time.Minute))
	ctx := ctxT(t, 20*time.Second)
	r := f.NewReadLock("sheet")
	if _, err := r.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	w := f.NewWriteLock("sheet")
	got := make(chan error, 1)
	go func() {
		_, err := w.Acquire(ctx)
		got <- err
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("writer returned %v while a reader held", err)
	default:
	}
	r.Release(ctx)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the writer was not woken by the reader's release")
	}
	w.Release(ctx)
}

// TestRWLockReaderLeaseExpires: a reader that neither extends nor releases
// is no longer counted once its lease expires on the nodes.
func TestRWLockReaderLeaseExpires(t *testing.T) {
	_, f := factory(t, redlock.WithRetryDelay(50*time.Millisecond))
	ctx := ctxT(t, 10*time.Second)
	r := f.NewReadLock("lease", redlock.WithTTL(500*time.Millisecond), redlock.WithAutoextend(false))
	if _, err := r.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	w := f.NewWriteLock("lease")
	if _, err := w.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.Done():
	default:
		t.Fatal("the writer got in while the reader's validity lasted")
	}
	w.Release(ctx)
}

// TestRWLockWriterNotStarved: readers come and go so that one always holds;
// a writer that waits still gets in, because its intent keeps new readers
// out, and while it holds no reader does.
func TestRWLockWriterNotStarved(t *testing.T) {
	_, f := factory(t, redlock.WithRetryDelay(20*time.Millisecond))
	ctx := ctxT(t, 30*time.Second)
	var reading, writing, overlaps, reads atomic.Int32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := f.NewReadLock("busy", redlock.WithRetryTimes(0))
			time.Sleep(time.Duration(i) * 10 * time.Millisecond) // staggered: the holds overlap
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := r.TryAcquire(ctx); err != nil {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				reading.Add(1)
				reads.Add(1)
				if writing.Load() > 0 {
					overlaps.Add(1)
				}
				time.Sleep(40 * time.Millisecond)
				reading.Add(-1)
				r.Release(ctx)
			}
		}()
	}
	waitFor(t, 5*time.Second, "readers streaming", func() bool { return reads.Load() >= 8 })
	w := f.NewWriteLock("busy")
	start := time.Now()
	if _, err := w.Acquire(ctxT(t, 15*time.Second)); err != nil {
		close(stop)
		wg.Wait()
		t.Fatalf("writer starved by a stream of readers: %v", err)
	}
	t.Logf("writer in after %v, with %d reads so far", time.Since(start), reads.Load())
	writing.Add(1)
	if reading.Load() > 0 {
		overlaps.Add(1)
	}
	time.Sleep(100 * time.Millisecond)
	writing.Add(-1)
	w.Release(ctx)
	before := reads.Load()
	waitFor(t, 5*time.Second, "readers back after the writer", func() bool { return reads.Load() > before })
	close(stop)
	wg.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("%d overlaps of the writer with readers", n)
	}
}

// TestRWLockExclusion runs readers and writers together and checks that a
// writer never overlaps a reader or another writer.
func TestRWLockExclusion(t *testing.T) {
	_, f := factory(t, redlock.WithRetryDelay(10*time.Millisecond))
	ctx := ctxT(t, 60*time.Second)
	var reading, writing, bad, maxReaders atomic.Int32
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var l redlock.Locker = f.NewReadLock("mixed")
			if i < 2 {
				l = f.NewWriteLock("mixed")
			}
			for range 5 {
				if _, err := l.Acquire(ctx); err != nil {
					t.Errorf("holder %d: %v", i, err)
					return
				}
				if i < 2 {
					if writing.Add(1) > 1 || reading.Load() > 0 {
						bad.Add(1)
					}
				} else {
					n := reading.Add(1)
					for m := maxReaders.Load(); n > m && !maxReaders.CompareAndSwap(m, n); m = maxReaders.Load() {
					}
					if writing.Load() > 0 {
						bad.Add(1)
					}
				}
				time.Sleep(3 * time.Millisecond)
				if i < 2 {
					writing.Add(-1)
				} else {
					reading.Add(-1)
				}
				if err := l.Release(ctx); err != nil {
					t.Errorf("holder %d: release: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := bad.Load(); n != 0 {
		t.Fatalf("%d overlaps of a writer with a reader or writer", n)
	}
	t.Logf("up to %d readers at once", maxReaders.Load())
}
