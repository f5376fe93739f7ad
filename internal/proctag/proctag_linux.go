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
// itself, whose environment holds the entry tag ("KEY=VALUE"), and returns
// how many it signalled. It looks again after each round of kills, for
// children forked meanwhile, until a look finds no process it has not
// signalled yet (one killed a moment ago may still be listed).
func Kill(tag string) (int, error) {
	tried, n := map[int]bool{}, 0
	for range 100 {
		pids, err := tagged(tag)
		if err != nil {
			return n, err
		}
		fresh := false
		for _, pid := range pids {
			if tried[pid] {
				continue
			}
			fresh, tried[pid] = true, true
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
		if !fresh {
			return n, nil
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
