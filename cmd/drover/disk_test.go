//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/faultfs"
	"github.com/drover-dev/drover/internal/hook"
)

// TestStoreOnAFullOrReadOnlyDisk puts the store on a small tmpfs: the
// state directory alone, or the whole .drover directory (logs, task files
// and loop files with it). Filled up, the store cannot commit a loop's
// growing record: the real `drover hook stop` exits 0 and lets the agent
// stop with a systemMessage naming the reason and the store file; nothing
// committed is lost; freed, the same supervisor commits the next stop.
// Remounted read-only (Linux refuses that under a process with a file open
// for writing, so the supervisor is stopped first), the hook that would
// start the supervisor fails open the same way, naming the first file it
// could not write, and the loop goes on once the disk is writable again.
func TestStoreOnAFullOrReadOnlyDisk(t *testing.T) {
	for _, tc := range []struct {
		name string
		// mount is the tmpfs's mount point under .drover.
		mount string
		// roFile is the file a start on the read-only disk names,
		// under .drover.
		roFile string
	}{
		{name: "state", mount: "state", roFile: "state/drover.db"},
		{name: "drover dir", mount: ".", roFile: "logs/serve.out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			diskFault(t, tc.mount, tc.roFile)
		})
	}
}

func diskFault(t *testing.T, mount, roFile string) {
	const size = 1 << 20
	p := newProj(t)
	mnt := filepath.Join(p.root, ".drover", mount)
	faultfs.MountTmpfs(t, mnt, size)
	// Cleanups run last first: the supervisor ends before the unmount.
	t.Cleanup(p.stopSupervisor)
	state := filepath.Join(p.root, ".drover", "state")
	db := filepath.Join(state, "drover.db")
	const id = "disk-loop"
	// A long prompt is re-fed in every block reason and each answer is
	// recorded: the record outgrows whatever pages the file had free.
	prompt := "make the parser handle unicode " + strings.Repeat("and keep every test green ", 100)
	p.must(fmt.Sprintf("%q --max-iterations 100", prompt), "loop", "start", "--session", id, "--args", "-")
	stop := func() (hook.Output, result) {
		t.Helper()
		r := p.drover(`{"session_id":"`+id+`","hook_event_name":"Stop","last_assistant_message":"Working on it.","cwd":"`+p.root+`"}`, "hook", "stop")
		if r.code != 0 {
			t.Fatalf("drover hook stop exited %d (must always exit 0)\nstderr: %s", r.code, r.stderr)
		}
		out := hook.Output{}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("drover hook stop printed %q: %v", r.stdout, err)
		}
		return out, r
	}
	if out, _ := stop(); !out.IsBlock() {
		t.Fatalf("the first stop: %+v", out)
	}
	pid := p.supervisorPID()
	if pid == 0 {
		t.Fatal("no supervisor runs after the first stop")
	}

	filled := faultfs.Fill(t, filepath.Join(mnt, "filler"))
	// Stops that find free pages in the file still commit; the record
	// grows by the prompt at each, so one soon needs a page the disk
	// cannot give. session.MaxRecorded (32) stops grow it past the file.
	committed := p.loopStatus(id).Iteration
	var failed hook.Output
	for i := 0; i < 32 && failed.SystemMessage == ""; i++ {
		out, _ := stop()
		switch {
		case out.IsBlock():
			committed++
		default:
			failed = out
		}
	}
	if failed.SystemMessage == "" {
		t.Fatalf("32 stops committed on a full disk (%d bytes filled)", filled)
	}
	for _, want := range []string{"no space left on device", db, id} {
		if !strings.Contains(failed.SystemMessage, want) {
			t.Errorf("the stop on a full disk said %q, not %q", failed.SystemMessage, want)
		}
	}
	t.Logf("full: %s", failed.SystemMessage)
	if again, _ := stop(); again.IsBlock() || !strings.Contains(again.SystemMessage, "no space left on device") {
		t.Errorf("a second stop on the full disk: %+v", again)
	}
	if st := p.loopStatus(id); st.Iteration != committed || !st.Active {
		t.Errorf("loop status on the full disk: iteration %d active %v, want the committed %d", st.Iteration, st.Active, committed)
	}

	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	if out, _ := stop(); !out.IsBlock() || out.SystemMessage != "" {
		t.Fatalf("the stop once space returned: %+v", out)
	}
	committed++
	if got := p.supervisorPID(); got != pid {
		t.Errorf("the supervisor changed (%d, was %d): it should recover by itself", got, pid)
	}
	if st := p.loopStatus(id); st.Iteration != committed {
		t.Errorf("iteration %d after space returned, want %d", st.Iteration, committed)
	}
	t.Logf("%d bytes filled; %d iterations committed", filled, committed)

	p.stopSupervisor()
	faultfs.Remount(t, mnt, size, true)
	ro, r := stop()
	if ro.IsBlock() {
		t.Fatalf("a stop with the store on a read-only disk blocked: %+v", ro)
	}
	for _, want := range []string{"read-only file system", filepath.Join(p.root, ".drover", roFile), id} {
		if !strings.Contains(ro.SystemMessage, want) {
			t.Errorf("the stop on a read-only disk said %q, not %q (stderr %s)", ro.SystemMessage, want, r.stderr)
		}
	}
	t.Logf("read-only: %s", ro.SystemMessage)
	faultfs.Remount(t, mnt, size, false)
	if out, _ := stop(); !out.IsBlock() {
		t.Fatalf("the stop once the disk is writable again: %+v", out)
	}
	committed++
	if st := p.loopStatus(id); st.Iteration != committed || !st.Active {
		t.Errorf("after the read-only disk: iteration %d active %v, want %d", st.Iteration, st.Active, committed)
	}
}
