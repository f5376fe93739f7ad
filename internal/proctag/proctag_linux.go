//go:build linux

package proctag

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Kill kills (SIGKILL) every process this one may read, other than
// itself, whose environment holds the entry tag ("KEY=VALUE"), until a
// look finds none, and returns how many it signalled.
func Kill(tag string) (int, error) {
	n := 0
	for range 10 {
		pids, err := tagged(tag)
		if err != nil || len(pids) == 0 {
			return n, err
		}
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
	}
	return n, fmt.Errorf("killing the processes tagged %s: new ones keep appearing", tag)
}

// tagged lists the live processes whose environment holds tag; a zombie's
// environment reads empty.
func tagged(tag string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	self, want := os.Getpid(), []byte(tag)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue // gone, or another user's
		}
		for kv := range bytes.SplitSeq(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids, nil
}
