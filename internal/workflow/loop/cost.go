package loop

import (
	"github.com/drover-dev/drover/convergence"
	summary "github.com/drover-dev/drover/internal/transcript"
)

// UsageCost is what one usage report of the session's transcript adds to
// the spend of loop s: its cost at convergence.DefaultPrices when it was
// written since the loop started, else nothing (the session may have
// worked, and spent, before the loop; a report without a time cannot be
// placed, so it is not counted).
func UsageCost(s State, u summary.Usage) float64 {
	if u.Timestamp.Before(s.StartedAt) {
		return 0
	}
	return convergence.DefaultPrices().Cost(u)
}
