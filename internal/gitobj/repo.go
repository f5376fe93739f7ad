package gitobj

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/drover-dev/drover/internal/atomicfile"
	"github.com/drover-dev/drover/internal/proc"
)

// Repo is a git repository's object and ref storage.
type Repo struct {
	// common is the repository's common git directory (its work trees
	// share it); objects its object directory.
	common, objects string
	// unsupported says why the storage is left to git ("" : it is not).
	unsupported string
}

// Open returns the storage of the repository at dir, asking git once
// where it is and how it is kept.
func Open(ctx context.Context, dir string) (*Repo, error) {
	out, err := proc.Git(ctx, dir, "rev-parse", "--path-format=absolute", "--git-common-dir", "--git-path", "objects", "--show-object-format")
	if err != nil {
		return nil, fmt.Errorf("opening the git repository %q: %w", dir, err)
	}
	lines := strings.Fields(out)
	if len(lines) != 3 {
		return nil, fmt.Errorf("opening the git repository %q: git rev-parse said %q", dir, out)
	}
	r := &Repo{common: lines[0], objects: lines[1]}
	switch {
	case lines[2] != "sha1":
		r.unsupported = "objects of format " + lines[2]
	case exists(filepath.Join(r.common, "reftable")):
		r.unsupported = "reftable refs"
	}
	return r, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func (r *Repo) check() error {
	if r.unsupported != "" {
		return fmt.Errorf("a repository of %s: %w", r.unsupported, ErrUnsupported)
	}
	return nil
}

// Ref returns the commit a ref under refs/ names, "" when there is no
// such ref, read as git does: its loose file, else packed-refs. A
// symbolic ref is ErrUnsupported.
func (r *Repo) Ref(name string) (string, error) {
	if err := r.check(); err != nil {
		return "", err
	}
	if !strings.HasPrefix(name, "refs/") || strings.Contains(name, "..") {
		return "", fmt.Errorf("ref %q: %w", name, ErrUnsupported)
	}
	// A directory of that name is a prefix of other refs: not this one.
	data, err := os.ReadFile(filepath.Join(r.common, filepath.FromSlash(name)))
	switch {
	case err == nil:
		id := strings.TrimSpace(string(data))
		if !IsID(id) {
			return "", fmt.Errorf("ref %q holds %q: %w", name, id, ErrUnsupported)
		}
		return id, nil
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.EISDIR):
		return "", fmt.Errorf("reading ref %q: %w", name, err)
	}
	f, err := os.Open(filepath.Join(r.common, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading packed-refs: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if id, ref, ok := strings.Cut(sc.Text(), " "); ok && ref == name && IsID(id) {
			return id, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("reading packed-refs: %w", err)
	}
	return "", nil
}

// Has says whether the repository has the object id, loose or in one of
// its packs (or its alternates'). False is "not found here": an object
// that git finds elsewhere (a promisor remote) is the caller's to ask git
// about.
func (r *Repo) Has(id string) bool {
	if r.check() != nil || !IsID(id) {
		return false
	}
	_, ok := locate(r.objects, id, 0)
	return ok
}

// location is where an object is kept: its loose file, or a pack and the
// offset of its entry in it.
type location struct {
	loose, pack string
	off         int64
}

// locate finds the object id in the object directory objects, or in its
// alternates' (up to 5 deep).
func locate(objects, id string, depth int) (location, bool) {
	if p := filepath.Join(objects, id[:2], id[2:]); exists(p) {
		return location{loose: p}, true
	}
	raw, _ := hex.DecodeString(id)
	idx, _ := filepath.Glob(filepath.Join(objects, "pack", "*.idx"))
	for _, f := range idx {
		if off, ok := indexOffset(f, raw); ok {
			return location{pack: strings.TrimSuffix(f, ".idx") + ".pack", off: off}, true
		}
	}
	if depth >= 5 {
		return location{}, false
	}
	alt, err := os.ReadFile(filepath.Join(objects, "info", "alternates"))
	if err != nil {
		return location{}, false
	}
	for _, line := range strings.Split(string(alt), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if !filepath.IsAbs(line) {
			line = filepath.Join(objects, line)
		}
		if loc, ok := locate(line, id, depth+1); ok {
			return loc, true
		}
	}
	return location{}, false
}

// indexOffset returns where the pack of the version 2 index file holds
// id, by a binary search of the index's sorted ids read in place.
func indexOffset(file string, id []byte) (int64, bool) {
	f, err := os.Open(file)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var head [8 + 256*4]byte
	if _, err := f.ReadAt(head[:], 0); err != nil || string(head[:4]) != "\xfftOc" || binary.BigEndian.Uint32(head[4:8]) != 2 {
		return 0, false
	}
	fanout := func(i int) uint32 { return binary.BigEndian.Uint32(head[8+4*i:]) }
	total := int64(fanout(255))
	lo, hi := uint32(0), fanout(int(id[0]))
	if id[0] > 0 {
		lo = fanout(int(id[0]) - 1)
	}
	var name [20]byte
	for lo < hi {
		mid := lo + (hi-lo)/2
		if _, err := f.ReadAt(name[:], int64(len(head))+int64(mid)*20); err != nil {
			return 0, false
		}
		switch c := bytes.Compare(name[:], id); {
		case c == 0:
			// After the ids come their CRCs, then their offsets: 31 bits,
			// or with the top bit set an index into 64-bit offsets.
			offsets := int64(len(head)) + total*(20+4)
			var b [8]byte
			if _, err := f.ReadAt(b[:4], offsets+int64(mid)*4); err != nil {
				return 0, false
			}
			off := binary.BigEndian.Uint32(b[:4])
			if off&0x80000000 == 0 {
				return int64(off), true
			}
			if _, err := f.ReadAt(b[:], offsets+total*4+int64(off&0x7fffffff)*8); err != nil {
				return 0, false
			}
			return int64(binary.BigEndian.Uint64(b[:])), true
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0, false
}

// Write writes objs as loose objects, those the repository lacks, each
// by a temporary file renamed into place so that no reader sees half of
// one. As git's own loose objects by default, they are not synced: a
// machine that crashes loses what the last moments wrote, and the caller
// (whose result still waits in JetStream) writes them again.
func (r *Repo) Write(objs []Object) error {
	if err := r.check(); err != nil {
		return err
	}
	var buf bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&buf, zlib.BestSpeed)
	for _, o := range objs {
		dir := filepath.Join(r.objects, o.ID[:2])
		path := filepath.Join(dir, o.ID[2:])
		if exists(path) {
			continue
		}
		buf.Reset()
		zw.Reset(&buf)
		fmt.Fprintf(zw, "%s %d\x00", o.Type, len(o.Data))
		// A write's error is Close's too.
		_, _ = zw.Write(o.Data)
		if err := zw.Close(); err != nil {
			return fmt.Errorf("compressing object %s: %w", o.ID, err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("writing object %s: %w", o.ID, err)
		}
		// The error names the object's file.
		if err := atomicfile.WriteUnsynced(path, buf.Bytes(), 0o444); err != nil {
			return err
		}
	}
	return nil
}

// Unbundle writes the objects of a bundle into the repository and
// returns its header. Every prerequisite must be in the repository; one
// that Has does not find is ErrUnsupported (git may find it), as is a
// bundle this package cannot read.
func (r *Repo) Unbundle(data []byte) (Bundle, error) {
	if err := r.check(); err != nil {
		return Bundle{}, err
	}
	b, pack, err := ParseBundle(data)
	if err != nil {
		return Bundle{}, err
	}
	for _, p := range b.Prerequisites {
		if !r.Has(p) {
			return Bundle{}, fmt.Errorf("the bundle's prerequisite %s is not found here: %w", p, ErrUnsupported)
		}
	}
	objs, err := ParsePack(pack)
	if err != nil {
		return Bundle{}, err
	}
	// A few objects are written loose, as a commit writes them; more are
	// kept as the pack they came in, with an index (two files, where
	// each loose object is one, and creating files is what costs).
	if len(objs) <= maxLoose {
		err = r.Write(objs)
	} else {
		err = r.writePack(pack, objs)
	}
	if err != nil {
		return Bundle{}, err
	}
	return b, nil
}

// maxLoose is how many objects of a bundle are written loose at most.
const maxLoose = 8

// writePack keeps pack, whose objects ParsePack read as objs, in the
// repository's packs, with its version 2 index: the pack first, then
// the index, each renamed into place, as git index-pack does (git finds
// a pack by its index).
func (r *Repo) writePack(pack []byte, objs []Object) error {
	sorted := slices.Clone(objs)
	slices.SortFunc(sorted, func(a, b Object) int { return strings.Compare(a.ID, b.ID) })
	for i := 1; i < len(sorted); i++ {
		if sorted[i].ID == sorted[i-1].ID {
			// An index lists each object once: written loose.
			return r.Write(objs)
		}
	}
	if len(pack) > 1<<31-1 {
		return r.Write(objs)
	}
	sum := pack[len(pack)-sha1.Size:]
	idx := make([]byte, 0, 8+256*4+len(sorted)*(20+4+4)+2*sha1.Size)
	idx = append(idx, 0xff, 't', 'O', 'c', 0, 0, 0, 2)
	var fanout [256]uint32
	for _, o := range sorted {
		b, _ := hex.DecodeString(o.ID[:2])
		fanout[b[0]]++
	}
	var n uint32
	for i := range fanout {
		n += fanout[i]
		idx = binary.BigEndian.AppendUint32(idx, n)
	}
	for _, o := range sorted {
		raw, _ := hex.DecodeString(o.ID)
		idx = append(idx, raw...)
	}
	for _, o := range sorted {
		idx = binary.BigEndian.AppendUint32(idx, o.crc)
	}
	for _, o := range sorted {
		idx = binary.BigEndian.AppendUint32(idx, uint32(o.offset))
	}
	idx = append(idx, sum...)
	idxSum := sha1.Sum(idx)
	idx = append(idx, idxSum[:]...)

	dir := filepath.Join(r.objects, "pack")
	base := filepath.Join(dir, "pack-"+hex.EncodeToString(sum))
	if exists(base + ".idx") {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing pack %s: %w", base, err)
	}
	// Each error names its file.
	if err := atomicfile.WriteUnsynced(base+".pack", pack, 0o444); err != nil {
		return err
	}
	return atomicfile.WriteUnsynced(base+".idx", idx, 0o444)
}

// MakeBundle returns a bundle of ref at head with the objects head
// reaches and none of have does, packed by git (one pack-objects,
// without git bundle's second process), and the number of objects in it:
// zero when have reach head, where git bundle create refuses. have are
// the bundle's prerequisites: the receiver must have them.
func MakeBundle(ctx context.Context, dir, ref, head string, have []string) ([]byte, int, error) {
	if !IsID(head) {
		return nil, 0, fmt.Errorf("bundling %s: %q is not a commit id", ref, head)
	}
	revs := head + "\n"
	for _, h := range have {
		if !IsID(h) {
			return nil, 0, fmt.Errorf("bundling %s: %q is not a commit id", ref, h)
		}
		revs += "^" + h + "\n"
	}
	header := Bundle{Prerequisites: have, Refs: map[string]string{ref: head}}.AppendHeader(nil)
	out := bytes.NewBuffer(header)
	cmd := proc.GitCmd(dir, "pack-objects", "--revs", "--stdout", "--delta-base-offset", "--window=0", "-q")
	cmd.Stdin = strings.NewReader(revs)
	cmd.Stdout = out
	if res, err := proc.Run(ctx, cmd); err != nil {
		err = &proc.GitError{Args: cmd.Args, Err: err, Stderr: res.Stderr.String()}
		return nil, 0, fmt.Errorf("packing %s beyond %s: %w", ref, strings.Join(have, ", "), err)
	}
	data := out.Bytes()
	pack := data[len(header):]
	if len(pack) < 12 || string(pack[:4]) != "PACK" {
		return nil, 0, fmt.Errorf("packing %s: git pack-objects wrote no pack", ref)
	}
	return data, int(binary.BigEndian.Uint32(pack[8:12])), nil
}
