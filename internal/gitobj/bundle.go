package gitobj

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// bundleSignature starts a version 2 git bundle, the version git writes
// for SHA-1 repositories.
const bundleSignature = "# v2 git bundle\n"

// Bundle is what a git bundle's header says: the commits the receiver
// must have (Prerequisites) and the refs it brings (ref name to commit).
type Bundle struct {
	Prerequisites []string
	Refs          map[string]string
}

// AppendHeader appends b's header to dst: what git bundle create writes
// before the pack, so that git reads the bundle too (git bundle unbundle,
// git fetch).
func (b Bundle) AppendHeader(dst []byte) []byte {
	dst = append(dst, bundleSignature...)
	for _, p := range b.Prerequisites {
		dst = append(dst, '-')
		dst = append(dst, p...)
		dst = append(dst, '\n')
	}
	refs := make([]string, 0, len(b.Refs))
	for r := range b.Refs {
		refs = append(refs, r)
	}
	slices.Sort(refs)
	for _, r := range refs {
		dst = append(dst, b.Refs[r]...)
		dst = append(dst, ' ')
		dst = append(dst, r...)
		dst = append(dst, '\n')
	}
	return append(dst, '\n')
}

// ParseBundle splits a version 2 bundle into its header and its pack.
func ParseBundle(data []byte) (Bundle, []byte, error) {
	rest, ok := bytes.CutPrefix(data, []byte(bundleSignature))
	if !ok {
		if bytes.HasPrefix(data, []byte("# v3 git bundle\n")) {
			return Bundle{}, nil, fmt.Errorf("a version 3 git bundle: %w", ErrUnsupported)
		}
		return Bundle{}, nil, errors.New("not a git bundle")
	}
	b := Bundle{Refs: map[string]string{}}
	for {
		line, after, ok := bytes.Cut(rest, []byte("\n"))
		if !ok {
			return Bundle{}, nil, errors.New("git bundle: its header does not end")
		}
		rest = after
		if len(line) == 0 {
			return b, rest, nil
		}
		prereq := line[0] == '-'
		if prereq {
			line = line[1:]
		}
		id, name, _ := strings.Cut(string(line), " ")
		if !IsID(id) {
			return Bundle{}, nil, fmt.Errorf("git bundle: %q is not an object id", id)
		}
		switch {
		case prereq:
			b.Prerequisites = append(b.Prerequisites, id)
		case name == "":
			return Bundle{}, nil, fmt.Errorf("git bundle: the ref of %s has no name", id)
		default:
			b.Refs[name] = id
		}
	}
}

// IsID says whether s is a SHA-1 object id in lower-case hex.
func IsID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ReadBundleHeader reads a bundle's header from r, leaving r at its pack.
func ReadBundleHeader(r *bufio.Reader) (Bundle, error) {
	var head []byte
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return Bundle{}, fmt.Errorf("git bundle: its header does not end: %w", err)
		}
		head = append(head, line...)
		if len(line) == 1 {
			break
		}
		if len(head) > 1<<20 {
			return Bundle{}, errors.New("git bundle: a header over 1 MiB")
		}
	}
	b, _, err := ParseBundle(head)
	return b, err
}
