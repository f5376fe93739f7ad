package config

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"slices"
	"sync"
	"time"
)

// pollInterval is how often Watch looks at the config files. Polling is
// used instead of the koanf file provider's fsnotify watch because that
// one cannot start on a file that does not exist yet and gives up after a
// removal; a config file is tiny, so reading it every second costs nothing.
const pollInterval = time.Second

// Watch reloads the whole configuration (all layers of src, into a fresh
// koanf) whenever the content of src.UserFile or src.ProjectFile changes,
// including when one appears or disappears, once the new content has held
// still for a poll interval (about a second). It calls onChange with the new
// Config when the effective configuration changed or recovered from an
// error, and with the error when a reload fails, in which case the caller
// should keep the configuration it has.
//
// onChange runs on Watch's goroutine, one call at a time. stop ends the
// goroutine and returns once it has exited; it is safe to call more than
// once but must not be called from inside onChange. Cancelling ctx also
// ends the watch.
func Watch(ctx context.Context, src Sources, onChange func(Config, error)) (stop func(), err error) {
	return watch(ctx, src, pollInterval, onChange)
}

func watch(ctx context.Context, src Sources, interval time.Duration, onChange func(Config, error)) (func(), error) {
	if onChange == nil {
		return nil, errors.New("watching config: onChange is nil")
	}
	var files []string
	for _, f := range []string{src.UserFile, src.ProjectFile} {
		if f != "" {
			files = append(files, f)
		}
	}

	// The baseline: changes are reported relative to what Load gives now.
	last := fingerprints(files)
	var pending []fingerprint
	cfg, loadErr := Load(src)

	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			now := fingerprints(files)
			if slices.Equal(now, last) {
				pending = nil
				continue
			}
			// Act only on content that held still for one interval: an
			// editor that truncates and then writes must not have its empty
			// file loaded (as the defaults) in between.
			if !slices.Equal(now, pending) {
				pending = now
				continue
			}
			last, pending = now, nil
			c, err := Load(src)
			switch {
			case err != nil:
				loadErr = err
				onChange(Config{}, err)
			case loadErr != nil || c != cfg:
				loadErr, cfg = nil, c
				onChange(c, nil)
			}
		}
	}()
	return sync.OnceFunc(func() {
		cancel()
		<-done
	}), nil
}

// fingerprint identifies a file's content, or the reason it could not be
// read (a missing file is a state too).
type fingerprint struct {
	sum    [sha256.Size]byte
	errMsg string
}

func fingerprints(files []string) []fingerprint {
	out := make([]fingerprint, len(files))
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			out[i].errMsg = err.Error()
			continue
		}
		out[i].sum = sha256.Sum256(b)
	}
	return out
}
