// Package parallel runs independent pieces of work on every core.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Workers returns how many goroutines Each uses for n pieces: GOMAXPROCS,
// at most n.
func Workers(n int) int { return max(0, min(runtime.GOMAXPROCS(0), n)) }

// Each calls f(g, i) for every i in [0, n) and returns when all calls have
// returned. Pieces are handed out in order to Workers(n) goroutines; g, in
// [0, Workers(n)), names the goroutine making the call, so that f can use
// scratch space of its own per goroutine. With one worker it runs inline.
func Each(n int, f func(g, i int)) {
	workers := Workers(n)
	if workers <= 1 {
		for i := range n {
			f(0, i)
		}
		return
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for g := range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(g, i)
			}
		})
	}
	wg.Wait()
}
