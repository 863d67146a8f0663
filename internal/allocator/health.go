package allocator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// heartbeat tells /livez whether the allocation loop makes progress: busy
// is when the step in progress started (zero when the loop waits for
// work), so a step that takes longer than timeout is a stuck loop.
type heartbeat struct {
	timeout time.Duration
	busy    atomic.Int64 // unix nanoseconds; 0 when idle
}

// live implements server.Options.Live.
func (h *heartbeat) live() error {
	start := h.busy.Load()
	if start == 0 {
		return nil
	}
	if d := time.Since(time.Unix(0, start)); d > h.timeout {
		return fmt.Errorf("allocation loop stuck: one step has run for %s (limit %s)", d.Round(time.Second), h.timeout)
	}
	return nil
}

// step runs one step of the loop under the heartbeat.
func (l *loop) step(fn func()) {
	l.hb.busy.Store(time.Now().UnixNano())
	defer l.hb.busy.Store(0)
	if l.before != nil {
		l.before()
	}
	fn()
}

// newDirWatcher returns an fsnotify watcher on dir.
func newDirWatcher(dir string, hook error) (*fsnotify.Watcher, error) {
	if hook != nil {
		return nil, hook
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch config file: %w", err)
	}
	if err := w.Add(dir); err != nil {
		return nil, errors.Join(fmt.Errorf("watch config file: %w", err), w.Close())
	}
	return w, nil
}

// fileSum returns a hash of the file's content, nil when it cannot be read.
func fileSum(log *slog.Logger, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		log.Warn("read config file", "file", path, "err", err)
		return nil
	}
	s := sha256.Sum256(b)
	return s[:]
}

// pollFile signals reload when the content of the file at path differs
// from what was last loaded (loaded, the hash of the content at start),
// checking every interval.
func pollFile(ctx context.Context, log *slog.Logger, path string, interval time.Duration, loaded []byte, reload chan<- struct{}) error {
	last := loaded
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			cur := fileSum(log, path)
			if cur == nil || bytes.Equal(cur, last) {
				continue
			}
			last = cur
			select {
			case reload <- struct{}{}:
			default: // a reload is already pending
			}
		}
	}
}
