package plan

import (
	"slices"
	"testing"
)

func TestDiffPathspecs(t *testing.T) {
	planFiles := []string{
		":(top).drover/plans/demo/plan.md",
		":(top).drover/plans/demo/tasks.md",
		":(top,glob).drover/plans/demo/task-*.md",
		":(top,glob,exclude).drover/plans/demo/task-*-review-*.md",
	}
	code := []string{":(top)", ":(top,exclude).drover"}
	tests := []struct {
		kind Kind
		want []string
	}{
		{KindPlan, planFiles},
		{KindTasks, planFiles},
		{KindCode, code},
		{KindAllCode, code},
	}
	for _, tc := range tests {
		if got := DiffPathspecs(tc.kind, "demo"); !slices.Equal(got, tc.want) {
			t.Errorf("DiffPathspecs(%s) = %q, want %q", tc.kind, got, tc.want)
		}
	}
}
