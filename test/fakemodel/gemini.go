package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The Gemini API, as the Gemini CLI 0.61 speaks it:
// POST /v1beta/models/{model}:streamGenerateContent?alt=sse for the chat,
// :generateContent for its JSON helper calls, :countTokens. Point the CLI
// at the server with GOOGLE_GEMINI_BASE_URL=URL().

// geminiPath splits a Gemini API path into the model and the method
// ("streamGenerateContent", "generateContent", "countTokens"); ok is false
// for any other path.
func geminiPath(path string) (model, method string, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSuffix(path, "/"), "/v1beta/models/")
	if !found {
		return "", "", false
	}
	model, method, found = strings.Cut(rest, ":")
	if !found || model == "" {
		return "", "", false
	}
	switch method {
	case "streamGenerateContent", "generateContent", "countTokens":
		return model, method, true
	}
	return "", "", false
}

// geminiRequest is the part of a generateContent body the server reads.
type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		ResponseMimeType string `json:"responseMimeType"`
	} `json:"generationConfig"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text         string `json:"text"`
	Thought      bool   `json:"thought"`
	FunctionCall *struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

// parseGeminiRequest fills r from a generateContent body. Contents become
// Messages with role "model" read as "assistant": a functionCall part is
// "tool_use NAME ARGS", a functionResponse part is its response's output
// (or the whole response JSON) and marks the message a tool result. A
// request with responseMimeType application/json (the CLI's router and
// loop checks) is noted in JSONMode.
func parseGeminiRequest(body []byte, model string, r *Request) error {
	var w geminiRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return fmt.Errorf("decoding Gemini API request: %w", err)
	}
	r.Model = model
	r.JSONMode = w.GenerationConfig.ResponseMimeType == "application/json"
	if w.SystemInstruction != nil {
		r.System, _ = geminiText(*w.SystemInstruction)
	}
	for _, t := range w.Tools {
		for _, f := range t.FunctionDeclarations {
			r.Tools = append(r.Tools, f.Name)
		}
	}
	for _, c := range w.Contents {
		role := c.Role
		if role == "model" {
			role = "assistant"
		}
		text, tr := geminiText(c)
		r.Messages = append(r.Messages, Message{Role: role, Text: text, ToolResult: tr})
	}
	r.setLastUser()
	return nil
}

// geminiText reduces a content to text and says whether it held a
// functionResponse part. Thoughts are left out.
func geminiText(c geminiContent) (string, bool) {
	var parts []string
	tr := false
	for _, p := range c.Parts {
		switch {
		case p.FunctionCall != nil:
			parts = append(parts, "tool_use "+p.FunctionCall.Name+" "+string(p.FunctionCall.Args))
		case p.FunctionResponse != nil:
			tr = true
			var out struct {
				Output string `json:"output"`
			}
			if json.Unmarshal(p.FunctionResponse.Response, &out) == nil && out.Output != "" {
				parts = append(parts, out.Output)
			} else {
				parts = append(parts, string(p.FunctionResponse.Response))
			}
		case p.Text != "" && !p.Thought:
			parts = append(parts, p.Text)
		}
	}
	return strings.Join(parts, "\n"), tr
}

// geminiResponse renders a reply as one GenerateContentResponse: a text
// part, then a functionCall part per tool call.
func (rp reply) geminiResponse(seq int) map[string]any {
	parts := []map[string]any{}
	for _, b := range rp.msg.Content {
		switch b.Type {
		case "text":
			parts = append(parts, map[string]any{"text": *b.Text})
		case "tool_use":
			parts = append(parts, map[string]any{"functionCall": map[string]any{"name": b.Name, "args": b.Input}})
		}
	}
	u := rp.msg.Usage
	in := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	usage := map[string]any{
		"promptTokenCount":     in,
		"candidatesTokenCount": u.OutputTokens,
		"totalTokenCount":      in + u.OutputTokens,
	}
	if u.CacheReadInputTokens > 0 {
		usage["cachedContentTokenCount"] = u.CacheReadInputTokens
	}
	return map[string]any{
		"candidates": []map[string]any{{
			"content":      map[string]any{"role": "model", "parts": parts},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": usage,
		"modelVersion":  rp.msg.Model,
		"responseId":    fmt.Sprintf("fake_%06d", seq),
	}
}

// geminiError is the Gemini API error shape.
func geminiError(status int, typ, message string) []byte {
	b, _ := json.Marshal(map[string]any{
		"error": map[string]any{"code": status, "message": message, "status": typ},
	})
	return b
}

// writeGemini sends a rendered reply: streamGenerateContent gets one SSE
// frame ("data: JSON", CRLF framing, no event line, no terminator: the
// client reads to the end of the body), generateContent the JSON.
func writeGemini(w http.ResponseWriter, rp reply, r *Request) {
	b, err := json.Marshal(rp.geminiResponse(r.Seq))
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, geminiError(http.StatusInternalServerError, "INTERNAL", "fakemodel: "+err.Error()))
		return
	}
	if !r.Stream {
		writeJSON(w, http.StatusOK, b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprintf(w, "data: %s\r\n\r\n", b)
}
