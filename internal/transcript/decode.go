package transcript

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A transcript line is decoded by a walk over its bytes that decodes the
// fields the reader needs and skips the rest, in one pass. encoding/json
// reads a line several times over (a validity scan, then the decoding,
// then again for each value with its own UnmarshalJSON: the content, its
// blocks, their content), and that cost dominated reading a long
// session's transcript. The walk is as strict as encoding/json: a line it
// rejects is one json.Unmarshal rejects, and a field of the wrong type is
// left as json.Unmarshal leaves it (see decodeEntryJSON in the tests,
// which a fuzz target holds it to).

// maxDepth is encoding/json's limit on nesting.
const maxDepth = 10000

// walker walks the JSON text b. Its methods return false on a syntax
// error, after which the walk is abandoned; a value of the wrong type for
// its field sets mismatch and is skipped.
type walker struct {
	b        []byte
	i        int
	depth    int
	mismatch bool
}

func (w *walker) ws() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (w *walker) peek() byte {
	w.ws()
	if w.i >= len(w.b) {
		return 0
	}
	return w.b[w.i]
}

func (w *walker) enter() bool {
	w.depth++
	return w.depth <= maxDepth
}

// object walks an object, calling member for each key with the walker at
// the member's value, which member must consume.
func (w *walker) object(member func(key []byte) bool) bool {
	if w.peek() != '{' || !w.enter() {
		return false
	}
	w.i++
	if w.peek() == '}' {
		w.i++
		w.depth--
		return true
	}
	for {
		if w.peek() != '"' {
			return false
		}
		k, ok := w.keyBytes()
		if !ok || w.peek() != ':' {
			return false
		}
		w.i++
		if !member(k) {
			return false
		}
		switch w.peek() {
		case ',':
			w.i++
		case '}':
			w.i++
			w.depth--
			return true
		default:
			return false
		}
	}
}

// array walks an array, calling elem with the walker at each element.
func (w *walker) array(elem func() bool) bool {
	if w.peek() != '[' || !w.enter() {
		return false
	}
	w.i++
	if w.peek() == ']' {
		w.i++
		w.depth--
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch w.peek() {
		case ',':
			w.i++
		case ']':
			w.i++
			w.depth--
			return true
		default:
			return false
		}
	}
}

// keyBytes reads a key: its bytes when it has no escapes, else its
// decoded bytes.
func (w *walker) keyBytes() ([]byte, bool) {
	start := w.i + 1
	for j := start; j < len(w.b); j++ {
		c := w.b[j]
		if c == '"' {
			w.i = j + 1
			return w.b[start:j], true
		}
		if c == '\\' || c < 0x20 {
			break
		}
	}
	s, ok := w.str()
	return []byte(s), ok
}

// is reports whether key k names field: exactly, or equal under Unicode
// case folding, as encoding/json matches them.
func is(k []byte, field string) bool {
	return string(k) == field || (len(k) <= 4*len(field) && strings.EqualFold(string(k), field))
}

// str reads a string, decoded as encoding/json decodes it (invalid UTF-8
// and unpaired surrogates become U+FFFD). A string with escapes (a tool's
// output has a \n on every line) is found whole first, so that its
// decoding is written into one buffer of the right size in runs.
func (w *walker) str() (string, bool) {
	if w.i >= len(w.b) || w.b[w.i] != '"' {
		return "", false
	}
	start := w.i + 1
	j := start
	for j < len(w.b) {
		c := w.b[j]
		if c == '"' {
			w.i = j + 1
			return string(w.b[start:j]), true
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		j++
	}
	if !w.skipString() {
		return "", false
	}
	end := w.i - 1 // the closing quote
	b := w.b[:end]
	var out strings.Builder
	out.Grow(end - start)
	for j := start; j < end; {
		// A run of bytes that stand for themselves.
		run := j
		for j < end && b[j] != '\\' && b[j] < utf8.RuneSelf {
			j++
		}
		out.Write(b[run:j])
		if j >= end {
			break
		}
		if c := b[j]; c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && size == 1 {
				out.WriteRune(utf8.RuneError)
			} else {
				out.Write(b[j : j+size])
			}
			j += size
			continue
		}
		// An escape; skipString checked it is whole and valid.
		switch e := b[j+1]; e {
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			r, _ := hex4(b, j+2)
			j += 6
			if utf16.IsSurrogate(r) {
				if j+1 < end && b[j] == '\\' && b[j+1] == 'u' {
					if r2, ok := hex4(b, j+2); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							out.WriteRune(dec)
							j += 6
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			out.WriteRune(r)
			continue
		default: // '"', '\\', '/'
			out.WriteByte(e)
		}
		j += 2
	}
	return out.String(), true
}

// hex4 reads the four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	return r, true
}

// skipString skips a string, checking it as str does, without decoding.
func (w *walker) skipString() bool {
	b := w.b
	for j := w.i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			w.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if j+1 >= len(b) {
				return false
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if _, ok := hex4(b, j+2); !ok {
					return false
				}
				j += 5
			default:
				return false
			}
		}
	}
	return false
}

// literal reads a number, true, false or null, and returns its bytes.
func (w *walker) literal() ([]byte, bool) {
	start := w.i
	if w.i >= len(w.b) {
		return nil, false
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if w.b[w.i] == lit[0] {
			if !bytes.HasPrefix(w.b[w.i:], []byte(lit)) {
				return nil, false
			}
			w.i += len(lit)
			return w.b[start:w.i], true
		}
	}
	// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
	b, i := w.b, w.i
	digits := func() bool {
		n := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		digits()
	default:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return nil, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return nil, false
		}
	}
	w.i = i
	return b[start:i], true
}

// skip skips any value.
func (w *walker) skip() bool {
	switch w.peek() {
	case '"':
		return w.skipString()
	case '{':
		return w.object(func([]byte) bool { return w.skip() })
	case '[':
		return w.array(w.skip)
	}
	_, ok := w.literal()
	return ok
}

// raw skips a value and returns its bytes.
func (w *walker) raw() ([]byte, bool) {
	w.ws()
	start := w.i
	if !w.skip() {
		return nil, false
	}
	return w.b[start:w.i], true
}

// isNull reports whether the next value is null, and consumes it if so.
func (w *walker) isNull() bool {
	if w.peek() == 'n' && bytes.HasPrefix(w.b[w.i:], []byte("null")) {
		w.i += 4
		return true
	}
	return false
}

// strField decodes a string value into dst: null leaves dst as it was,
// another type is a mismatch.
func (w *walker) strField(dst *string) bool {
	switch w.peek() {
	case '"':
		s, ok := w.str()
		if ok {
			*dst = s
		}
		return ok
	case 'n':
		if w.isNull() {
			return true
		}
	}
	w.mismatch = true
	return w.skip()
}

// boolField decodes a boolean value into dst, as strField does strings.
func (w *walker) boolField(dst *bool) bool {
	if w.isNull() {
		return true
	}
	lit, ok := w.literal()
	if !ok {
		w.mismatch = true
		return w.skip()
	}
	switch string(lit) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		w.mismatch = true
	}
	return true
}

// intField decodes an integer value into dst, as strField does strings.
func (w *walker) intField(dst *int64) bool {
	if w.isNull() {
		return true
	}
	c := w.peek()
	if c != '-' && (c < '0' || c > '9') {
		w.mismatch = true
		return w.skip()
	}
	lit, ok := w.literal()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	if err != nil {
		w.mismatch = true
		return true
	}
	*dst = n
	return true
}

// rawField keeps a value's bytes (a copy) in dst, as json.RawMessage does.
func (w *walker) rawField(dst *[]byte) bool {
	b, ok := w.raw()
	if ok {
		*dst = append((*dst)[:0:0], b...)
	}
	return ok
}

// objectField decodes an object into *dst with member; null sets *dst to
// nil, another type is a mismatch. Like encoding/json, it makes *dst
// for any value but null, even one of the wrong type.
func objectField[T any](w *walker, dst **T, member func(*T, []byte) bool) bool {
	if w.isNull() {
		*dst = nil
		return true
	}
	if *dst == nil {
		*dst = new(T)
	}
	if w.peek() == '{' {
		v := *dst
		return w.object(func(k []byte) bool { return member(v, k) })
	}
	w.mismatch = true
	return w.skip()
}

// decodeEntry decodes line into e. ok is false when the line is not JSON
// (e is then of no use); clean is false when some field had the wrong
// type and was left out.
func decodeEntry(line []byte, e *entry) (ok, clean bool) {
	w := walker{b: line}
	if w.peek() != '{' {
		return false, false
	}
	if !w.object(func(k []byte) bool { return w.entryMember(e, k) }) {
		return false, false
	}
	if w.ws(); w.i != len(w.b) {
		return false, false
	}
	return true, !w.mismatch
}

func (w *walker) entryMember(e *entry, k []byte) bool {
	switch {
	case is(k, "type"):
		return w.strField(&e.Type)
	case is(k, "subtype"):
		return w.strField(&e.Subtype)
	case is(k, "timestamp"):
		return w.strField(&e.Timestamp)
	case is(k, "uuid"):
		return w.strField(&e.UUID)
	case is(k, "isSidechain"):
		return w.boolField(&e.IsSidechain)
	case is(k, "isMeta"):
		return w.boolField(&e.IsMeta)
	case is(k, "isCompactSummary"):
		return w.boolField(&e.IsCompactSummary)
	case is(k, "message"):
		return objectField(w, &e.Message, w.messageMember)
	case is(k, "toolUseResult"):
		return w.rawField((*[]byte)(&e.ToolUseResult))
	}
	return w.skip()
}

func (w *walker) messageMember(m *message, k []byte) bool {
	switch {
	case is(k, "id"):
		return w.strField(&m.ID)
	case is(k, "model"):
		return w.strField(&m.Model)
	case is(k, "usage"):
		return objectField(w, &m.Usage, w.usageMember)
	case is(k, "content"):
		return w.content(&m.Content)
	}
	return w.skip()
}

func (w *walker) usageMember(u *usageCounts, k []byte) bool {
	switch {
	case is(k, "input_tokens"):
		return w.intField(&u.InputTokens)
	case is(k, "output_tokens"):
		return w.intField(&u.OutputTokens)
	case is(k, "cache_read_input_tokens"):
		return w.intField(&u.CacheReadInputTokens)
	case is(k, "cache_creation_input_tokens"):
		return w.intField(&u.CacheCreationInputTokens)
	}
	return w.skip()
}

// content decodes a content as content.UnmarshalJSON does: a string is
// one text block, an array is blocks (an element that is not an object
// is an empty block), anything else leaves it empty; no shape is a
// mismatch.
func (w *walker) content(dst *content) bool {
	switch w.peek() {
	case '"':
		s, ok := w.str()
		if ok {
			*dst = content{{Type: "text", Text: s}}
		}
		return ok
	case '[':
		// Decoded apart, so that a mismatch in a block does not count
		// against the entry (content.UnmarshalJSON ignores them).
		outer := w.mismatch
		bs := content{} // as encoding/json makes it for []
		ok := w.array(func() bool {
			bs = append(bs, block{})
			b := &bs[len(bs)-1]
			if w.peek() != '{' {
				return w.skip()
			}
			return w.object(func(k []byte) bool { return w.blockMember(b, k) })
		})
		w.mismatch = outer
		if ok {
			*dst = bs
		}
		return ok
	case 'n':
		if w.isNull() {
			return true
		}
	}
	return w.skip()
}

func (w *walker) blockMember(b *block, k []byte) bool {
	switch {
	case is(k, "type"):
		return w.strField(&b.Type)
	case is(k, "text"):
		return w.strField(&b.Text)
	case is(k, "id"):
		return w.strField(&b.ID)
	case is(k, "name"):
		return w.strField(&b.Name)
	case is(k, "input"):
		return w.rawField((*[]byte)(&b.Input))
	case is(k, "tool_use_id"):
		return w.strField(&b.ToolUseID)
	case is(k, "content"):
		return w.content(&b.Content)
	case is(k, "is_error"):
		return w.boolField(&b.IsError)
	}
	return w.skip()
}

// decodeToolInput decodes the fields of a tool call's input that the
// reader keeps; an input that is not an object leaves them empty.
func decodeToolInput(raw []byte, in *toolInput) {
	w := walker{b: raw}
	if w.peek() != '{' {
		return
	}
	w.object(func(k []byte) bool {
		switch {
		case is(k, "command"):
			return w.strField(&in.Command)
		case is(k, "file_path"):
			return w.strField(&in.FilePath)
		case is(k, "notebook_path"):
			return w.strField(&in.NotebookPath)
		case is(k, "output_hint"):
			return w.strField(&in.OutputHint)
		}
		return w.skip()
	})
}

// decodeToolUseResult reads the entry-level toolUseResult: a string, or
// an object's stdout, stderr and content strings.
func decodeToolUseResult(raw []byte) (s string, parts [3]string) {
	w := walker{b: raw}
	switch w.peek() {
	case '"':
		s, _ = w.str()
	case '{':
		w.object(func(k []byte) bool {
			switch {
			case is(k, "stdout"):
				return w.strField(&parts[0])
			case is(k, "stderr"):
				return w.strField(&parts[1])
			case is(k, "content"):
				return w.strField(&parts[2])
			}
			return w.skip()
		})
	}
	return s, parts
}
