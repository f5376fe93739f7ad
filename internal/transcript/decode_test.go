package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// decodeEntryJSON is how lines were decoded before decodeEntry, with
// encoding/json: the reference decodeEntry is held to.
func decodeEntryJSON(line []byte, e *entry) (ok, clean bool) {
	if err := json.Unmarshal(line, e); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return false, false
		}
		return true, false
	}
	return true, true
}

// toolUseResultTextJSON is toolUseResultText with encoding/json.
func toolUseResultTextJSON(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	case '{':
		var r struct {
			Stdout  string `json:"stdout"`
			Stderr  string `json:"stderr"`
			Content string `json:"content"`
		}
		_ = json.Unmarshal(raw, &r)
		parts := make([]string, 0, 3)
		for _, p := range []string{r.Stdout, r.Stderr, r.Content} {
			if p != "" {
				parts = append(parts, p)
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// checkDecode compares decodeEntry with encoding/json on line, which
// starts with '{' as the lines decodeLine decodes do.
func checkDecode(t *testing.T, line []byte) {
	t.Helper()
	if len(line) == 0 || line[0] != '{' {
		return
	}
	var got, want entry
	gok, gclean := decodeEntry(line, &got)
	wok, wclean := decodeEntryJSON(line, &want)
	if gok != wok {
		t.Fatalf("%q: decodeEntry ok %v, encoding/json ok %v", line, gok, wok)
	}
	if !gok {
		return
	}
	if gclean != wclean {
		t.Errorf("%q: decodeEntry clean %v, encoding/json %v", line, gclean, wclean)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q:\ndecodeEntry   %#v\nencoding/json %#v", line, got, want)
	}
	if got.Message != nil && want.Message != nil {
		for i, b := range got.Message.Content {
			if len(b.Input) == 0 {
				continue
			}
			var gin, win toolInput
			decodeToolInput(b.Input, &gin)
			_ = json.Unmarshal(want.Message.Content[i].Input, &win)
			if gin != win {
				t.Errorf("%q: tool input %+v, encoding/json %+v", b.Input, gin, win)
			}
		}
	}
	if g, w := toolUseResultText(got.ToolUseResult), toolUseResultTextJSON(want.ToolUseResult); g != w {
		t.Errorf("%q: toolUseResult text %q, encoding/json %q", got.ToolUseResult, g, w)
	}
}

var decodeCases = []string{
	`{}`,
	`{"type":"assistant","uuid":"a","message":{"id":"m","model":"x","content":[{"type":"text","text":"hi \u00e9 \ud83d\ude00 \ud800 \\ \/ \b\f\n\r\t"}],"usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":3,"cache_creation_input_tokens":4}}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","is_error":true,"content":[{"type":"text","text":"a"},{"type":"image"}]}]},"toolUseResult":{"stdout":"o","stderr":"e","content":5}}`,
	`{"type":"user","message":{"content":"plain"},"toolUseResult":"Error: no"}`,
	`{"TYPE":"user","Message":{"CONTENT":"folded keys"},"uuıd":"dotless"}`,
	`{"type":5,"uuid":null,"isSidechain":"yes","isMeta":1,"message":"str"}`,
	`{"message":[1,2]}`,
	`{"message":{"id":"a"},"message":{"content":"merged"}}`,
	`{"message":{"id":"a"},"message":null}`,
	`{"message":{"content":[1,"s",null,[],{"type":"text","text":7,"is_error":"x"}]}}`,
	`{"message":{"content":{}},"type":"user"}`,
	`{"message":{"content":[]}}`,
	`{"message":{"content":null}}`,
	`{"message":{"usage":{"input_tokens":1.5,"output_tokens":99999999999999999999,"cache_read_input_tokens":-3,"cache_creation_input_tokens":"7"}}}`,
	`{"message":{"usage":5}}`,
	`{"message":{"usage":null}}`,
	`{"message":{"content":[{"type":"tool_use","input":{"command":"ls","file_path":3,"notebook_path":"n","output_hint":"h"}}]}}`,
	`{"message":{"content":[{"type":"tool_use","input":null}]}}`,
	`{"message":{"content":[{"type":"tool_use","input":"str"}]}}`,
	`{"message":{"content":[{"type":"tool_use","input":  [1, {"a" : 2}] }]}}`,
	"{\"a\":\"\xff\xfe\",\"type\":\"us\xffer\"}",
	`{"a":1e5,"b":-0.5E-3,"c":[true,false,null],"d":{"e":{}}}`,
	`{"a":01}`,
	`{"a":-}`,
	`{"a":1.}`,
	`{"a":"\x"}`,
	`{"a":"\u12"}`,
	"{\"a\":\"tab\there\"}",
	`{"a":tru}`,
	`{"a":nul}`,
	`{"a":1,}`,
	`{"a":1} x`,
	`{"a" 1}`,
	`{"a":[1,]}`,
	`{"\u0074ype":"user","message":{"content":"escaped key"}}`,
	`{"type":"user","type":null}`,
	`{"toolUseResult":null}`,
	`{"toolUseResult":  {"stdout" : "x"}  }`,
	"{\"a\":[" + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + "]}",
	"{\"a\":" + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + "}",
}

func TestDecodeEntryMatchesEncodingJSON(t *testing.T) {
	for _, c := range decodeCases {
		checkDecode(t, []byte(c))
	}
	for _, line := range strings.Split(readTestdata(t, "loop.jsonl"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			checkDecode(t, []byte(line))
		}
	}
}

// FuzzDecodeEntry holds decodeEntry to encoding/json: the same lines
// rejected, the same fields decoded, the same type mismatches.
func FuzzDecodeEntry(f *testing.F) {
	for _, c := range decodeCases[:len(decodeCases)-2] {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkDecode(t, line)
	})
}
