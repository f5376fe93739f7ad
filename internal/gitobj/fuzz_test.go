package gitobj

import (
	"testing"
)

// FuzzParseBundle: a bundle from the network (a worker's result, a job's
// commits) that is damaged or hostile is an error, never a panic, and
// what parses is objects whose ids are their contents' and a header of
// object ids; so are its trees and commits read.
func FuzzParseBundle(f *testing.F) {
	f.Add([]byte(bundleSignature + "\n"))
	f.Add([]byte(bundleSignature + "-" + "0123456789abcdef0123456789abcdef01234567\n\nPACK"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, pack, err := ParseBundle(data)
		if err != nil {
			return
		}
		for _, p := range b.Prerequisites {
			if !IsID(p) {
				t.Errorf("prerequisite %q", p)
			}
		}
		for r, id := range b.Refs {
			if r == "" || !IsID(id) {
				t.Errorf("ref %q at %q", r, id)
			}
		}
		objs, err := ParsePack(pack)
		if err != nil {
			return
		}
		for _, o := range objs {
			if o.ID != objectID(o.Type, o.Data) || o.Type < Commit || o.Type > Tag {
				t.Errorf("object %s of type %d", o.ID, o.Type)
			}
			// What NewBundle reads of the objects a bundle brought.
			switch o.Type {
			case Tree:
				entries, err := parseTree(o.Data)
				for _, e := range entries {
					if err == nil && !IsID(e.id) {
						t.Errorf("tree entry %q of id %q", e.name, e.id)
					}
				}
			case Commit:
				if tree, _, err := commitLinks(o.Data); err == nil && !IsID(tree) {
					t.Errorf("commit of tree %q", tree)
				}
			}
		}
	})
}
