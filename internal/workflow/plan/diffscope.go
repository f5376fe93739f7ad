package plan

import "path"

// PlansDir is where plan folders live, relative to the project root (and,
// with git, to the top of the work tree).
const PlansDir = ".drover/plans"

// DiffPathspecs returns the git pathspecs of what a review of kind k of
// plan planID reads, for the diff since the cycle's last review that a
// re-check prompt carries: what is under review, without drover's
// bookkeeping. A plan or tasks review reads the plan's own plan.md,
// tasks.md and task files; its review and post-review files, state.json,
// the run log and other plans are left out. A code review reads the code:
// everything outside .drover/. The pathspecs are relative to the top of
// the work tree (":(top)"), so they mean the same from any folder in it.
func DiffPathspecs(k Kind, planID string) []string {
	switch k {
	case KindPlan, KindTasks:
		dir := path.Join(PlansDir, planID)
		return []string{
			":(top)" + path.Join(dir, "plan.md"),
			":(top)" + path.Join(dir, "tasks.md"),
			":(top,glob)" + path.Join(dir, "task-*.md"),
			// task-N-review-M.md and task-N-post-review-M.md match
			// task-*.md: they are drover's and the agent's review
			// records, not the tasks.
			":(top,glob,exclude)" + path.Join(dir, "task-*-review-*.md"),
		}
	}
	return []string{":(top)", ":(top,exclude).drover"}
}
