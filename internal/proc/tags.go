package proc

import (
	"context"
	"slices"
)

// tagsKey is the context key of WithTags.
type tagsKey struct{}

// WithTags returns ctx with tags ("KEY=VALUE" entries) that Run adds to the
// environment of every process it starts under ctx, after Cmd.Env and
// Cmd.OwnerTag. It tags the commands a piece of work runs several layers
// down (the git commands of a run's work trees and merges, in
// internal/worktree) without each layer passing them on: the supervisor's
// watchdog, and a resumed run, find and end them by these tags. Tags
// already on ctx are kept.
func WithTags(ctx context.Context, tags ...string) context.Context {
	var all []string
	for _, t := range append(Tags(ctx), tags...) {
		if t != "" && !slices.Contains(all, t) {
			all = append(all, t)
		}
	}
	return context.WithValue(ctx, tagsKey{}, all)
}

// Tags returns the tags WithTags put on ctx.
func Tags(ctx context.Context) []string {
	tags, _ := ctx.Value(tagsKey{}).([]string)
	return slices.Clone(tags)
}
