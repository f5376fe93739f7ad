package gitobj

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// maxDeltaChain bounds the deltas followed to read one packed object
// (git's own packs stay under 50).
const maxDeltaChain = 64

// Read returns the object id of the repository, loose or packed, its
// own or its alternates'. An object it cannot read is ErrUnsupported.
func (r *Repo) Read(id string) (Object, error) {
	if err := r.check(); err != nil {
		return Object{}, err
	}
	if !IsID(id) {
		return Object{}, fmt.Errorf("object %q: not an id", id)
	}
	return r.read(id, 0, &inflater{})
}

// read is Read with in, whose zlib reader serves every object read.
func (r *Repo) read(id string, depth int, in *inflater) (Object, error) {
	if depth > maxDeltaChain {
		return Object{}, fmt.Errorf("object %s: a delta chain over %d: %w", id, maxDeltaChain, ErrUnsupported)
	}
	loc, ok := locate(r.objects, id, 0)
	switch {
	case !ok:
		return Object{}, fmt.Errorf("object %s: not found here: %w", id, ErrUnsupported)
	case loc.loose != "":
		return readLoose(loc.loose, id, in)
	}
	t, data, err := r.readPacked(loc.pack, loc.off, depth, in)
	if err != nil {
		return Object{}, fmt.Errorf("object %s: %w", id, err)
	}
	return Object{ID: id, Type: t, Data: data}, nil
}

// readLoose reads the loose object id from its file.
func readLoose(file, id string, in *inflater) (Object, error) {
	f, err := os.Open(file)
	if err != nil {
		return Object{}, err
	}
	defer f.Close()
	zr, err := in.reader(bufio.NewReader(f))
	if err != nil {
		return Object{}, fmt.Errorf("object %s: %w", id, err)
	}
	br := bufio.NewReader(zr)
	head, err := br.ReadString(0)
	if err != nil {
		return Object{}, fmt.Errorf("object %s: its header: %w", id, err)
	}
	name, size, _ := strings.Cut(strings.TrimSuffix(head, "\x00"), " ")
	n, err := strconv.Atoi(size)
	if err != nil || n < 0 || n > MaxObject {
		return Object{}, fmt.Errorf("object %s: a size of %q: %w", id, size, ErrUnsupported)
	}
	t := typeNamed(name)
	if t == 0 {
		return Object{}, fmt.Errorf("object %s: type %q: %w", id, name, ErrUnsupported)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(br, data); err != nil {
		return Object{}, fmt.Errorf("object %s: %w", id, err)
	}
	return Object{ID: id, Type: t, Data: data}, nil
}

func typeNamed(name string) Type {
	for _, t := range []Type{Commit, Tree, Blob, Tag} {
		if t.String() == name {
			return t
		}
	}
	return 0
}

// readPacked reads the entry at off of the pack file, its deltas
// resolved.
func (r *Repo) readPacked(file string, off int64, depth int, in *inflater) (Type, []byte, error) {
	if depth > maxDeltaChain {
		return 0, nil, fmt.Errorf("a delta chain over %d: %w", maxDeltaChain, ErrUnsupported)
	}
	f, err := os.Open(file)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	// The entry's header and a delta's base: at most 10 + 20 bytes.
	var head [32]byte
	n, err := f.ReadAt(head[:], off)
	if n == 0 && err != nil {
		return 0, nil, err
	}
	t, size, pos, err := entryHeader(head[:n], 0)
	if err != nil {
		return 0, nil, err
	}
	var base func() (Type, []byte, error)
	switch t {
	case Commit, Tree, Blob, Tag:
	case ofsDelta:
		back, next, err := deltaOffset(head[:n], pos)
		if err != nil {
			return 0, nil, err
		}
		pos = next
		if back <= 0 || int64(back) > off {
			return 0, nil, fmt.Errorf("the delta at %d has no base", off)
		}
		base = func() (Type, []byte, error) { return r.readPacked(file, off-int64(back), depth+1, in) }
	case refDelta:
		if pos+20 > n {
			return 0, nil, errors.New("a truncated entry")
		}
		id := hex.EncodeToString(head[pos : pos+20])
		pos += 20
		base = func() (Type, []byte, error) {
			o, err := r.read(id, depth+1, in)
			return o.Type, o.Data, err
		}
	default:
		return 0, nil, fmt.Errorf("object type %d at %d", t, off)
	}
	zr, err := in.reader(bufio.NewReader(io.NewSectionReader(f, off+int64(pos), 1<<62)))
	if err != nil {
		return 0, nil, err
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(zr, data); err != nil {
		return 0, nil, err
	}
	if base == nil {
		return t, data, nil
	}
	bt, bdata, err := base()
	if err != nil {
		return 0, nil, err
	}
	out, err := applyDelta(bdata, data)
	return bt, out, err
}

// treeEntry is one entry of a tree object.
type treeEntry struct {
	mode string
	name string
	id   string
}

// parseTree reads a tree object's entries.
func parseTree(data []byte) ([]treeEntry, error) {
	var out []treeEntry
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp < 0 || nul < sp || nul+21 > len(data) {
			return nil, errors.New("a malformed tree")
		}
		out = append(out, treeEntry{mode: string(data[:sp]), name: string(data[sp+1 : nul]), id: hex.EncodeToString(data[nul+1 : nul+21])})
		data = data[nul+21:]
	}
	return out, nil
}

// commitLinks reads a commit's tree and parents.
func commitLinks(data []byte) (string, []string, error) {
	var tree string
	var parents []string
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "tree "); ok {
			tree = v
		} else if v, ok := strings.CutPrefix(line, "parent "); ok {
			parents = append(parents, v)
		}
	}
	if !IsID(tree) {
		return "", nil, errors.New("a commit without a tree")
	}
	return tree, parents, nil
}

// maxWalk bounds the commits NewBundle walks from a head to what the
// receiver has.
const maxWalk = 1000

// NewBundle is MakeBundle in process: a bundle of ref at head with the
// objects of the commits from head back to have, each commit's trees
// and blobs that none of its parents has at the same path (an unchanged
// subtree is the receiver's already), packed whole. A history that does
// not lead back to have within maxWalk commits, or an object this package
// cannot read, is ErrUnsupported: MakeBundle, by git, does it.
func (r *Repo) NewBundle(ref, head string, have []string) ([]byte, int, error) {
	if err := r.check(); err != nil {
		return nil, 0, err
	}
	stop := map[string]bool{}
	for _, h := range have {
		stop[h] = true
	}
	w := walker{r: r, seen: map[string]bool{}, cache: map[string]Object{}}
	seen := w.seen
	queue := []string{head}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if stop[c] || seen[c] {
			continue
		}
		seen[c] = true
		if len(seen) > maxWalk {
			return nil, 0, fmt.Errorf("bundling %s: over %d commits from %s: %w", ref, maxWalk, head, ErrUnsupported)
		}
		o, err := w.read(c)
		if err != nil {
			return nil, 0, err
		}
		if o.Type != Commit {
			return nil, 0, fmt.Errorf("bundling %s: %s is a %s: %w", ref, c, o.Type, ErrUnsupported)
		}
		tree, parents, err := commitLinks(o.Data)
		if err != nil {
			return nil, 0, fmt.Errorf("bundling %s: commit %s: %w", ref, c, err)
		}
		if len(parents) == 0 {
			return nil, 0, fmt.Errorf("bundling %s: the root %s, not what the receiver has: %w", ref, c, ErrUnsupported)
		}
		w.objs = append(w.objs, o)
		var olds []string
		for _, p := range parents {
			po, err := w.read(p)
			if err != nil {
				return nil, 0, err
			}
			pt, _, err := commitLinks(po.Data)
			if err != nil {
				return nil, 0, fmt.Errorf("bundling %s: commit %s: %w", ref, p, err)
			}
			olds = append(olds, pt)
		}
		if err := w.newTree(tree, olds); err != nil {
			return nil, 0, fmt.Errorf("bundling %s: %w", ref, err)
		}
		queue = append(queue, parents...)
	}
	data := Bundle{Prerequisites: have, Refs: map[string]string{ref: head}}.AppendHeader(nil)
	return appendPack(data, w.objs), len(w.objs), nil
}

// walker is NewBundle's walk: the objects it packs, those it has been
// through, and the commits and trees it read (a merge's first parent is
// the commit walked before it: its tree is read twice otherwise).
type walker struct {
	r     *Repo
	in    inflater
	objs  []Object
	seen  map[string]bool
	cache map[string]Object
}

func (w *walker) read(id string) (Object, error) {
	if o, ok := w.cache[id]; ok {
		return o, nil
	}
	o, err := w.r.read(id, 0, &w.in)
	if err == nil && o.Type != Blob {
		w.cache[id] = o
	}
	return o, err
}

// newTree adds the tree id and what it holds that the old trees (its
// parents' at the same path) do not.
func (w *walker) newTree(id string, olds []string) error {
	if w.seen[id] || slices.Contains(olds, id) {
		return nil
	}
	w.seen[id] = true
	o, err := w.read(id)
	if err != nil {
		return err
	}
	entries, err := parseTree(o.Data)
	if o.Type != Tree || err != nil {
		return fmt.Errorf("tree %s: %w", id, errors.Join(err, ErrUnsupported))
	}
	w.objs = append(w.objs, o)
	before := map[string][]treeEntry{}
	for _, old := range olds {
		oo, err := w.read(old)
		if err != nil {
			return err
		}
		oe, err := parseTree(oo.Data)
		if err != nil {
			return fmt.Errorf("tree %s: %w", old, err)
		}
		for _, e := range oe {
			before[e.name] = append(before[e.name], e)
		}
	}
	for _, e := range entries {
		if e.mode == "160000" || w.seen[e.id] {
			// A submodule's commit is not in this repository.
			continue
		}
		var sub []string
		same := false
		for _, b := range before[e.name] {
			same = same || b.id == e.id
			if b.mode == "40000" {
				sub = append(sub, b.id)
			}
		}
		switch {
		case same:
		case e.mode == "40000":
			if err := w.newTree(e.id, sub); err != nil {
				return err
			}
		default:
			w.seen[e.id] = true
			b, err := w.read(e.id)
			if err != nil {
				return err
			}
			w.objs = append(w.objs, b)
		}
	}
	return nil
}

// appendPack appends to dst a version 2 pack of objs, each whole.
func appendPack(dst []byte, objs []Object) []byte {
	start := len(dst)
	dst = append(dst, 'P', 'A', 'C', 'K', 0, 0, 0, 2)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(objs)))
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	for _, o := range objs {
		size := uint64(len(o.Data))
		c := byte(o.Type)<<4 | byte(size&15)
		size >>= 4
		for size > 0 {
			dst = append(dst, c|0x80)
			c = byte(size & 0x7f)
			size >>= 7
		}
		dst = append(dst, c)
		z.Reset()
		zw.Reset(&z)
		_, _ = zw.Write(o.Data)
		_ = zw.Close()
		dst = append(dst, z.Bytes()...)
	}
	sum := sha1.Sum(dst[start:])
	return append(dst, sum[:]...)
}
