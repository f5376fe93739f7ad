// Package gitobj reads and writes the few git objects of one iteration in
// process: the pack of a bundle, read into objects and written as loose
// objects, and a branch's commit read from its ref. Each git process an
// iteration on a remote worker spares is a few milliseconds on a busy
// machine; git itself still does what needs its judgement (walking
// history to pack it, moving a ref under its lock).
//
// Only what drover's own bundles need is read here: a repository whose
// objects or refs are stored otherwise (SHA-256 objects, reftable refs),
// or a pack that names an object it does not hold, is ErrUnsupported, and
// the caller asks git.
package gitobj

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
)

// ErrUnsupported is what this package cannot read and git can: the
// caller falls back to git.
var ErrUnsupported = errors.New("not readable in process")

// Type is a git object's type.
type Type uint8

// The object types of a pack (1 to 4; 6 and 7 are deltas).
const (
	Commit Type = 1
	Tree   Type = 2
	Blob   Type = 3
	Tag    Type = 4

	ofsDelta = 6
	refDelta = 7
)

func (t Type) String() string {
	switch t {
	case Commit:
		return "commit"
	case Tree:
		return "tree"
	case Blob:
		return "blob"
	case Tag:
		return "tag"
	}
	return "type" + strconv.Itoa(int(t))
}

// Object is a git object: its id (hex SHA-1 of its header and data), type
// and data.
type Object struct {
	ID   string
	Type Type
	Data []byte

	// offset and crc are where its entry starts in the pack ParsePack
	// read it from and the CRC-32 of the entry's bytes: what a pack
	// index holds.
	offset int
	crc    uint32
}

// objectID is the id of an object of type t with data.
func objectID(t Type, data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "%s %d\x00", t, len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// MaxObject bounds the size of one object read from a pack: a bigger
// one is left to git, which streams it.
const MaxObject = 256 << 20

// ParsePack reads a whole pack (version 2 or 3, SHA-1) into its objects,
// deltas resolved, in the pack's order. Its trailing checksum is checked.
// A delta whose base is not in the pack (a thin pack) is ErrUnsupported.
func ParsePack(pack []byte) ([]Object, error) {
	if len(pack) < 12+sha1.Size || string(pack[:4]) != "PACK" {
		return nil, errors.New("not a git pack")
	}
	if v := binary.BigEndian.Uint32(pack[4:8]); v != 2 && v != 3 {
		return nil, fmt.Errorf("git pack version %d: %w", v, ErrUnsupported)
	}
	body, sum := pack[:len(pack)-sha1.Size], pack[len(pack)-sha1.Size:]
	if got := sha1.Sum(body); !bytes.Equal(got[:], sum) {
		return nil, errors.New("git pack: checksum mismatch")
	}
	n := binary.BigEndian.Uint32(pack[8:12])
	// Each object takes at least two bytes: a count beyond that is a lie
	// that would otherwise size the slices below.
	if uint64(n) > uint64(len(body)-12)/2 {
		return nil, fmt.Errorf("git pack: %d objects in %d bytes", n, len(body))
	}
	objs := make([]Object, 0, n)
	byOffset := make(map[int]int, n)
	byID := make(map[string]int, n)
	in := &inflater{}
	pos := 12
	for range n {
		start := pos
		t, size, next, err := entryHeader(body, pos)
		if err != nil {
			return nil, err
		}
		pos = next
		var base *Object
		switch t {
		case Commit, Tree, Blob, Tag:
		case ofsDelta:
			off, next, err := deltaOffset(body, pos)
			if err != nil {
				return nil, err
			}
			pos = next
			i, ok := byOffset[start-off]
			if off <= 0 || off > start || !ok {
				return nil, fmt.Errorf("git pack: the delta at %d has no base at %d", start, start-off)
			}
			base = &objs[i]
		case refDelta:
			if pos+sha1.Size > len(body) {
				return nil, errors.New("git pack: truncated")
			}
			id := hex.EncodeToString(body[pos : pos+sha1.Size])
			pos += sha1.Size
			i, ok := byID[id]
			if !ok {
				return nil, fmt.Errorf("git pack: a delta on %s, outside the pack: %w", id, ErrUnsupported)
			}
			base = &objs[i]
		default:
			return nil, fmt.Errorf("git pack: object type %d at %d", t, start)
		}
		data, used, err := in.inflate(body[pos:], size)
		if err != nil {
			return nil, fmt.Errorf("git pack: the object at %d: %w", start, err)
		}
		pos += used
		if base != nil {
			t = base.Type
			if data, err = applyDelta(base.Data, data); err != nil {
				return nil, fmt.Errorf("git pack: the delta at %d: %w", start, err)
			}
		}
		o := Object{ID: objectID(t, data), Type: t, Data: data, offset: start, crc: crc32.ChecksumIEEE(body[start:pos])}
		byOffset[start] = len(objs)
		byID[o.ID] = len(objs)
		objs = append(objs, o)
	}
	if pos != len(body) {
		return nil, fmt.Errorf("git pack: %d bytes after its %d objects", len(body)-pos, n)
	}
	return objs, nil
}

// entryHeader reads the type and size of the pack entry at pos.
func entryHeader(b []byte, pos int) (Type, int, int, error) {
	if pos >= len(b) {
		return 0, 0, 0, errors.New("git pack: truncated")
	}
	c := b[pos]
	pos++
	t := Type(c >> 4 & 7)
	size := uint64(c & 15)
	for shift := 4; c&0x80 != 0; shift += 7 {
		if pos >= len(b) || shift > 35 {
			return 0, 0, 0, errors.New("git pack: a bad entry header")
		}
		c = b[pos]
		pos++
		size |= uint64(c&0x7f) << shift
	}
	if size > MaxObject {
		return 0, 0, 0, fmt.Errorf("git pack: an object of %d bytes: %w", size, ErrUnsupported)
	}
	return t, int(size), pos, nil
}

// deltaOffset reads the base offset of an ofs-delta entry (git's
// big-endian varint with an added one per continuation byte).
func deltaOffset(b []byte, pos int) (int, int, error) {
	if pos >= len(b) {
		return 0, 0, errors.New("git pack: truncated")
	}
	c := b[pos]
	pos++
	off := int(c & 0x7f)
	for c&0x80 != 0 {
		if pos >= len(b) || off > 1<<48 {
			return 0, 0, errors.New("git pack: a bad delta offset")
		}
		c = b[pos]
		pos++
		off = (off+1)<<7 | int(c&0x7f)
	}
	return off, pos, nil
}

// inflater inflates the zlib streams of a pack, one reader for them all.
type inflater struct {
	zr io.ReadCloser
	br bytes.Reader
}

// reader returns the zlib stream of src, by the one reader of f.
func (f *inflater) reader(src io.Reader) (io.Reader, error) {
	if f.zr == nil {
		zr, err := zlib.NewReader(src)
		f.zr = zr
		return zr, err
	}
	return f.zr, f.zr.(zlib.Resetter).Reset(src, nil)
}

// inflate returns the size bytes that b's zlib stream holds and how many
// bytes of b the stream took.
func (f *inflater) inflate(b []byte, size int) ([]byte, int, error) {
	f.br.Reset(b)
	var err error
	if f.zr == nil {
		f.zr, err = zlib.NewReader(&f.br)
	} else {
		err = f.zr.(zlib.Resetter).Reset(&f.br, nil)
	}
	if err != nil {
		return nil, 0, err
	}
	// Sized by what b can hold (zlib shrinks by at most about 1000:1), not
	// by the header alone, which could claim anything.
	buf := bytes.NewBuffer(make([]byte, 0, min(size, len(b)*1032+64)))
	// One byte past size: a stream longer than its header says is an
	// error, and reading to its end checks its checksum.
	if _, err := io.Copy(buf, io.LimitReader(f.zr, int64(size)+1)); err != nil {
		return nil, 0, err
	}
	if buf.Len() != size {
		return nil, 0, fmt.Errorf("%d bytes where its header says %d", buf.Len(), size)
	}
	return buf.Bytes(), len(b) - f.br.Len(), nil
}

// applyDelta applies a git delta to base.
func applyDelta(base, delta []byte) ([]byte, error) {
	srcSize, delta, err := deltaSize(delta)
	if err != nil {
		return nil, err
	}
	if srcSize != uint64(len(base)) {
		return nil, fmt.Errorf("its base has %d bytes, it says %d", len(base), srcSize)
	}
	dstSize, delta, err := deltaSize(delta)
	if err != nil {
		return nil, err
	}
	if dstSize > MaxObject {
		return nil, fmt.Errorf("a result of %d bytes: %w", dstSize, ErrUnsupported)
	}
	out := make([]byte, 0, min(dstSize, uint64(len(base)+len(delta))))
	for len(delta) > 0 {
		c := delta[0]
		delta = delta[1:]
		switch {
		case c&0x80 != 0:
			var off, n uint64
			for i := range 7 {
				if c&(1<<i) == 0 {
					continue
				}
				if len(delta) == 0 {
					return nil, errors.New("a truncated copy")
				}
				if i < 4 {
					off |= uint64(delta[0]) << (8 * i)
				} else {
					n |= uint64(delta[0]) << (8 * (i - 4))
				}
				delta = delta[1:]
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > uint64(len(base)) {
				return nil, errors.New("a copy out of its base")
			}
			out = append(out, base[off:off+n]...)
		case c != 0:
			if int(c) > len(delta) {
				return nil, errors.New("a truncated insert")
			}
			out = append(out, delta[:c]...)
			delta = delta[c:]
		default:
			return nil, errors.New("a zero instruction")
		}
		if uint64(len(out)) > dstSize {
			return nil, errors.New("longer than it says")
		}
	}
	if uint64(len(out)) != dstSize {
		return nil, fmt.Errorf("%d bytes where it says %d", len(out), dstSize)
	}
	return out, nil
}

// deltaSize reads one of a delta's two sizes (little-endian varint).
func deltaSize(b []byte) (uint64, []byte, error) {
	var v uint64
	for shift := 0; ; shift += 7 {
		if len(b) == 0 || shift > 56 {
			return 0, nil, errors.New("a bad delta size")
		}
		c := b[0]
		b = b[1:]
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, b, nil
		}
	}
}
