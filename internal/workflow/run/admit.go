package run

import (
	"errors"
	"slices"

	"github.com/drover-dev/drover/internal/api"
	"github.com/drover-dev/drover/templates"
)

// ErrRefused is wrapped by the error of a start, resume or cancel that the
// run's rules refuse: the request is wrong, not the supervisor.
var ErrRefused = errors.New("run request refused")

// Refusal is such an error; its text comes from templates.
type Refusal struct{ Text string }

func (e *Refusal) Error() string { return e.Text }

// Is makes a Refusal match ErrRefused.
func (e *Refusal) Is(target error) bool { return target == ErrRefused }

func refuse(t templates.Set, name string, vars map[string]string) error {
	return &Refusal{Text: say(t, name, vars)}
}

// busy refuses a new run while another is worked: the waves of every run
// are merged into the one main work tree, whose branch two runs would
// change under each other. live holds the ids of the runs being worked.
func busy(t templates.Set, live []string) error {
	if len(live) == 0 {
		return nil
	}
	return refuse(t, templates.RunBusy, map[string]string{"run_id": slices.Min(live)})
}

// AdmitStart decides whether a new run may start: no other run is worked
// (live holds their ids), and the main work tree at root is on a branch
// for the waves to merge into (target, empty when its HEAD is detached or
// git could not say).
func AdmitStart(t templates.Set, live []string, root, target string) error {
	if err := busy(t, live); err != nil {
		return err
	}
	if target == "" {
		return refuse(t, templates.RunNoBranch, map[string]string{"root": root})
	}
	return nil
}

// AdmitResume decides whether run id may be resumed: it is not worked
// already, no other run is, the store holds it (found), and it is not done
// (rec is the stored run).
func AdmitResume(t templates.Set, live []string, id string, found bool, rec api.Run) error {
	vars := map[string]string{"run_id": id}
	switch {
	case slices.Contains(live, id):
		return refuse(t, templates.RunLive, vars)
	case len(live) > 0:
		return busy(t, live)
	case !found:
		return refuse(t, templates.RunMissing, vars)
	case rec.State == api.RunDone:
		return refuse(t, templates.RunFinished, vars)
	}
	return nil
}

// AdmitCancel decides whether run id may be cancelled: only a run being
// worked can be (a stored one has nothing to stop).
func AdmitCancel(t templates.Set, live []string, id string) error {
	if slices.Contains(live, id) {
		return nil
	}
	return refuse(t, templates.RunNotLive, map[string]string{"run_id": id})
}
