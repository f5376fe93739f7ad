package agentrun

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestPoolBoundsConcurrency(t *testing.T) {
	for _, size := range []int{1, 2, 3} {
		p := NewPool(size)
		if p.Size() != size {
			t.Fatalf("Size = %d, want %d", p.Size(), size)
		}
		var running, peak atomic.Int32
		// Each function waits until size of them run at once, so a pool
		// that ran fewer would never finish, and a pool that ran more
		// would show it in peak.
		var full sync.WaitGroup
		full.Add(size)
		for i := range 3 * size {
			err := p.Go(context.Background(), func(context.Context) {
				n := running.Add(1)
				for {
					old := peak.Load()
					if n <= old || peak.CompareAndSwap(old, n) {
						break
					}
				}
				if i < size {
					full.Done()
					full.Wait()
				}
				running.Add(-1)
			})
			if err != nil {
				t.Fatalf("Go: %v", err)
			}
		}
		if err := p.Wait(); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		if got := peak.Load(); got != int32(size) {
			t.Errorf("size %d: peak concurrency %d", size, got)
		}
	}
}

func TestPoolZeroValueAndDefault(t *testing.T) {
	var p Pool
	if p.Size() != DefaultPoolSize || NewPool(0).Size() != DefaultPoolSize || NewPool(-3).Size() != DefaultPoolSize {
		t.Errorf("sizes %d, %d, %d; want %d", p.Size(), NewPool(0).Size(), NewPool(-3).Size(), DefaultPoolSize)
	}
	var n atomic.Int32
	for range 5 {
		if err := p.Go(context.Background(), func(context.Context) { n.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(); err != nil || n.Load() != 5 {
		t.Errorf("Wait = %v after %d runs, want nil after 5", err, n.Load())
	}
}

func TestPoolCancelledContext(t *testing.T) {
	p := NewPool(1)
	release := make(chan struct{})
	if err := p.Go(context.Background(), func(context.Context) { <-release }); err != nil {
		t.Fatal(err)
	}
	// The pool is full: a Go with a context that ends gives up.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	var ran atomic.Bool
	go func() { errc <- p.Go(ctx, func(context.Context) { ran.Store(true) }) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Go on a full pool with a cancelled context = %v", err)
	}
	close(release)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if ran.Load() {
		t.Error("function ran after Go returned an error")
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	if err := p.Go(done, func(context.Context) { ran.Store(true) }); !errors.Is(err, context.Canceled) || ran.Load() {
		t.Errorf("Go with a done context = %v, ran %v", err, ran.Load())
	}
	_ = p.Wait()
}

func TestPoolPanicsAndReuse(t *testing.T) {
	p := NewPool(2)
	sentinel := errors.New("boom")
	_ = p.Go(context.Background(), func(context.Context) { panic(sentinel) })
	_ = p.Go(context.Background(), func(context.Context) { panic("plain") })
	_ = p.Go(context.Background(), func(context.Context) {})
	err := p.Wait()
	var pe *PanicError
	if !errors.As(err, &pe) || !errors.Is(err, sentinel) || len(pe.Stack) == 0 {
		t.Fatalf("Wait = %v; want the panics as *PanicError with a stack", err)
	}
	// Reusable after Wait, with the panics cleared.
	var n atomic.Int32
	_ = p.Go(context.Background(), func(context.Context) { n.Add(1) })
	if err := p.Wait(); err != nil || n.Load() != 1 {
		t.Errorf("second Wait = %v, runs %d", err, n.Load())
	}
}
