package redlock

import (
	"context"
	"time"
)

// Locker is one holder of a lock-like primitive of this package: Lock,
// RLock, ReadLock, WriteLock, Semaphore, MultiLock and Election satisfy
// it, so code that only acquires, keeps and releases can take any of them
// (an Election's Acquire campaigns and its Release resigns).
//
// Acquire blocks until held or ctx ends; TryAcquire gives up after a bounded
// number of attempts. Both return the validity: how long the holding can be
// trusted from now unless extended. Done is closed when the holding ends
// (Release, loss, Factory.Close), and Err then says why (nil after a normal
// Release).
type Locker interface {
	Name() string
	Token() string
	Acquire(ctx context.Context) (time.Duration, error)
	TryAcquire(ctx context.Context) (time.Duration, error)
	Extend(ctx context.Context) (time.Duration, error)
	Release(ctx context.Context) error
	Done() <-chan struct{}
	Err() error
}

var (
	_ Locker = (*Lock)(nil)
	_ Locker = (*RLock)(nil)
	_ Locker = (*Semaphore)(nil)
	_ Locker = (*MultiLock)(nil)
	_ Locker = (*ReadLock)(nil)
	_ Locker = (*WriteLock)(nil)
	_ Locker = (*Election)(nil)
)
