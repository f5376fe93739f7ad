package agentrun

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
)

// DefaultPoolSize is how many agent processes run at once when the
// configured size is zero or less. Each agent is a heavy process (a Node
// runtime, tools, test runs), so the default is small.
const DefaultPoolSize = 2

// Pool runs functions on at most a fixed number of goroutines, for agent
// runs of one wave. Unlike a conc v0.3.0 pool it can be used again after
// Wait, and a panic in a function is returned by Wait as an error instead
// of being raised again. The zero value is a pool of DefaultPoolSize.
type Pool struct {
	size int
	once sync.Once
	sem  chan struct{}
	wg   sync.WaitGroup

	mu     sync.Mutex
	panics []error
}

// NewPool returns a pool that runs at most size functions at once;
// size <= 0 means DefaultPoolSize.
func NewPool(size int) *Pool {
	return &Pool{size: size}
}

func (p *Pool) init() {
	p.once.Do(func() {
		if p.size <= 0 {
			p.size = DefaultPoolSize
		}
		p.sem = make(chan struct{}, p.size)
	})
}

// Size returns how many functions the pool runs at once.
func (p *Pool) Size() int {
	p.init()
	return p.size
}

// Go runs f(ctx) on a new goroutine once fewer than Size functions are
// running, blocking until then. If ctx is done first, f is not run and the
// context's error is returned. f should return soon after ctx is done.
//
// Go may be called from several goroutines, but not at the same time as
// Wait.
func (p *Pool) Go(ctx context.Context, f func(ctx context.Context)) error {
	p.init()
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer func() { <-p.sem }()
		defer func() {
			if r := recover(); r != nil {
				p.mu.Lock()
				p.panics = append(p.panics, &PanicError{Value: r, Stack: debug.Stack()})
				p.mu.Unlock()
			}
		}()
		f(ctx)
	}()
	return nil
}

// Wait waits for every function started by Go and returns the panics they
// raised, as *PanicError values joined with errors.Join, or nil. The pool
// can be used again afterwards.
func (p *Pool) Wait() error {
	p.init()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	err := errors.Join(p.panics...)
	p.panics = nil
	return err
}

// PanicError is a panic recovered from a function run by a Pool.
type PanicError struct {
	// Value is what was passed to panic.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack []byte
}

// Error renders the panic value; the stack is in Stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("panic in pooled function: %v", e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
