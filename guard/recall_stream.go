package guard

// The recall loop's streamed answers: events are relayed as they arrive
// until the first tool call, then held until the answer ends, to be
// swallowed (a context_recall round follows) or forwarded (with the
// calls stripped when the round limit was reached). Continuations are
// stitched into one stream for the client.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// event is one NDJSON line or SSE event of a stream.
type event struct {
	raw  []byte // as received, every line
	data []byte // the JSON payload (nil: none)
}

// readEvent reads one event: an NDJSON line, or the lines of an SSE event
// up to its blank line; either at most maxUpstreamLine bytes.
func readEvent(br *bufio.Reader, sse bool) (event, error) {
	var ev event
	for {
		line, err := readLine(br)
		ev.raw = append(ev.raw, line...)
		if len(ev.raw) > maxUpstreamLine {
			return event{}, &tooLargeError{what: "upstream stream event", limit: maxUpstreamLine}
		}
		if isTooLarge(err) {
			return event{}, err
		}
		if !sse {
			if t := bytes.TrimSpace(line); len(t) > 0 {
				ev.data = t
			}
			return ev, err
		}
		if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			ev.data = bytes.TrimSpace(rest)
		}
		if err != nil || len(bytes.TrimSpace(line)) == 0 {
			return ev, err
		}
	}
}

// wholeEvent drops the fragment of an event a stream ended in (its last
// line without '\n' and not whole JSON nor [DONE]), turning a clean end
// into an unexpected one; an event whole but for its line ends gets them,
// so that what follows starts an event of its own.
func wholeEvent(ev event, err error, sse bool) (event, error) {
	if err == nil || len(ev.raw) == 0 {
		return ev, err
	}
	if ev.raw[len(ev.raw)-1] == '\n' {
		if sse && !bytes.HasSuffix(ev.raw, []byte("\n\n")) {
			ev.raw = append(ev.raw, '\n')
		}
		return ev, err
	}
	last := ev.raw[bytes.LastIndexByte(ev.raw, '\n')+1:]
	payload := bytes.TrimSpace(last)
	if sse {
		rest, ok := bytes.CutPrefix(payload, []byte("data:"))
		if !ok {
			return event{}, midLine(err)
		}
		payload = bytes.TrimSpace(rest)
	}
	if !errors.Is(err, io.EOF) || !(json.Valid(payload) || string(payload) == "[DONE]") {
		return event{}, midLine(err)
	}
	if sse {
		ev.raw = append(ev.raw, "\n\n"...)
	} else {
		ev.raw = append(ev.raw, '\n')
	}
	return ev, err
}

// streamEv is what the recall loop reads from one stream event.
type streamEv struct {
	Type    string        `json:"type"`
	Index   *int          `json:"index"`
	Done    bool          `json:"done"`
	Message *ollamaAnswer `json:"message"`
	Choices []struct {
		Delta struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	ContentBlock *struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
}

// thinkingBlock is an Anthropic thinking block built from a stream.
type thinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

// stream relays one streamed upstream answer: events are forwarded as
// they arrive until the first tool-call event; from there on they are held
// to the end. An answer that calls context_recall (with rounds left) is
// swallowed and returned for a round; otherwise the held events are
// forwarded (context_recall calls stripped when the limit was reached) and
// done is true.
func (rc *recaller) stream(w http.ResponseWriter, r *http.Request, f *fit, resp *http.Response) (*answer, bool) {
	g := rc.g
	defer resp.Body.Close()
	if !rc.started {
		h := w.Header()
		copyHeaders(h, resp.Header)
		f.rep.setHeaders(h)
		w.WriteHeader(resp.StatusCode)
		rc.started = true
	}
	flusher, _ := w.(http.Flusher)
	write := func(b []byte) bool {
		if _, err := w.Write(b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	br := bufio.NewReader(resp.Body)
	a := &answer{}
	byIndex := map[int]*call{}
	blockMap := map[int]int{} // Anthropic: upstream block index → client's
	recallBlocks := map[int]bool{}
	think := map[int]*thinkingBlock{}     // Anthropic thinking blocks by index
	redacted := map[int]json.RawMessage{} // and redacted_thinking ones
	var thinkOrder []int
	holding := false
	var held []event
	var finalData []byte
	read := 0 // bytes of this answer: what it holds is bounded by them
	ended := false
	for {
		ev, err := readEvent(br, sse)
		if read += len(ev.raw); read > maxUpstreamBody && err == nil {
			err = &tooLargeError{what: "upstream answer", limit: maxUpstreamBody}
		}
		ev, err = wholeEvent(ev, err, sse)
		if len(ev.data) > 0 && (lastEvent(rc.k, ev.data) || isErrorEvent(ev.data)) {
			ended = true
		}
		if len(ev.raw) > 0 {
			var se streamEv
			if len(ev.data) > 0 && ev.data[0] == '{' {
				_ = json.Unmarshal(ev.data, &se)
			}
			tool := false
			switch rc.k {
			case rdOllama:
				if se.Message != nil {
					a.text.WriteString(se.Message.Content)
					for _, c := range se.Message.ToolCalls {
						a.calls = append(a.calls, &call{ID: c.ID, Name: c.Function.Name, Args: c.Function.Arguments, index: len(a.calls)})
						tool = true
					}
				}
				if se.Done {
					finalData = ev.data
				}
			case rdOpenAI:
				for _, ch := range se.Choices {
					if ch.Delta.Content != nil {
						a.text.WriteString(*ch.Delta.Content)
					}
					for _, tc := range ch.Delta.ToolCalls {
						tool = true
						c := byIndex[tc.Index]
						if c == nil {
							c = &call{index: tc.Index}
							byIndex[tc.Index] = c
							a.calls = append(a.calls, c)
						}
						if tc.ID != "" {
							c.ID = tc.ID
						}
						c.Name += tc.Function.Name
						c.Args = append(c.Args, tc.Function.Arguments...)
					}
				}
				if readAnswer(rdOpenAI, ev.data, false).usage {
					finalData = ev.data
				}
			case rdAnthropic:
				switch se.Type {
				case "content_block_start":
					if se.ContentBlock != nil && se.ContentBlock.Type == "tool_use" && se.Index != nil {
						tool = true
						c := &call{ID: se.ContentBlock.ID, Name: se.ContentBlock.Name, index: *se.Index}
						byIndex[*se.Index] = c
						a.calls = append(a.calls, c)
						if c.Name == RecallTool {
							recallBlocks[*se.Index] = true
						}
					}
					if se.ContentBlock != nil && se.Index != nil {
						switch se.ContentBlock.Type {
						case "thinking":
							think[*se.Index] = &thinkingBlock{Type: "thinking"}
							thinkOrder = append(thinkOrder, *se.Index)
						case "redacted_thinking":
							var cb struct {
								Block json.RawMessage `json:"content_block"`
							}
							_ = json.Unmarshal(ev.data, &cb)
							redacted[*se.Index] = cb.Block
							thinkOrder = append(thinkOrder, *se.Index)
						}
					}
				case "content_block_delta":
					if se.Delta != nil && se.Index != nil {
						if c := byIndex[*se.Index]; c != nil {
							c.Args = append(c.Args, se.Delta.PartialJSON...)
						} else if tb := think[*se.Index]; tb != nil {
							tb.Thinking += se.Delta.Thinking
							tb.Signature += se.Delta.Signature
						} else {
							a.text.WriteString(se.Delta.Text)
						}
					}
				case "message_start", "message_delta":
					if n := jsonInt(ev.data, "message", "usage", "input_tokens"); n > 0 {
						finalData = ev.data
					}
				}
			}
			if tool {
				holding = true
			}
			if holding {
				held = append(held, ev)
			} else if out, ok := rc.forward(f, ev, &se, blockMap, nil); ok && !write(out) {
				return nil, true
			}
		}
		if err != nil {
			if r.Context().Err() != nil {
				return nil, true
			}
			if !ended {
				// Cut: what is held goes nowhere, the client gets the
				// error (and a round is not run on a cut call).
				if errors.Is(err, io.EOF) {
					err = errors.New("the stream ended before its last event")
				}
				g.relayEnded(r, f, cutStream(w, resp, f.rep, rc.k, err))
				return nil, true
			}
			break // a read error after the last event loses nothing
		}
	}
	if finalData != nil {
		g.observeAnswer(rc.k, f, finalData)
	}
	rec, others := a.recalls()
	if len(rec) > 0 && rc.rounds < rc.max {
		for _, i := range thinkOrder {
			if raw, ok := redacted[i]; ok {
				a.thinking = append(a.thinking, raw)
			} else if data, err := json.Marshal(think[i]); err == nil {
				a.thinking = append(a.thinking, data)
			}
		}
		for _, c := range a.calls {
			if len(c.Args) == 0 {
				c.Args = json.RawMessage(`{}`)
			}
		}
		if rc.k == rdOpenAI {
			for _, c := range rec {
				c.Args, _ = json.Marshal(string(c.Args))
			}
		}
		rc.cont = true
		return a, false
	}
	var strip map[int]bool
	if len(rec) > 0 {
		f.rep.RecallLimitReached = true
		strip = map[int]bool{}
		for _, c := range rec {
			strip[c.index] = true
		}
		if rc.k == rdAnthropic {
			strip = recallBlocks
		}
		if others == 0 {
			strip[-1] = true // no call left: the finish reason becomes a stop
		}
	}
	for _, ev := range held {
		var se streamEv
		if len(ev.data) > 0 && ev.data[0] == '{' {
			_ = json.Unmarshal(ev.data, &se)
		}
		if out, ok := rc.forward(f, ev, &se, blockMap, strip); ok && !write(out) {
			return nil, true
		}
	}
	return nil, true
}

// forward is one event as the client gets it, or ok false to drop it: in
// a continuation, OpenAI's role chunk and Anthropic's message_start are
// dropped and Anthropic's block indices follow on from the blocks already
// sent; the final event carries the report; strip (the round limit was
// reached) removes context_recall calls.
func (rc *recaller) forward(f *fit, ev event, se *streamEv, blockMap map[int]int, strip map[int]bool) ([]byte, bool) {
	if len(ev.data) == 0 || ev.data[0] != '{' {
		return ev.raw, true
	}
	data := ev.data
	final := false
	switch rc.k {
	case rdOllama:
		final = se.Done
		if strip != nil && se.Message != nil && len(se.Message.ToolCalls) > 0 {
			data = stripChunkCalls(data, "message")
			var left struct {
				Message struct {
					ToolCalls []json.RawMessage `json:"tool_calls"`
				} `json:"message"`
			}
			if !se.Done && se.Message.Content == "" && json.Unmarshal(data, &left) == nil && len(left.Message.ToolCalls) == 0 {
				return nil, false
			}
		}
	case rdOpenAI:
		// Clients (openai-go's accumulator) drop chunks of another id:
		// the continuation takes the first answer's.
		if id := jsonString(data, "id"); id != "" {
			if rc.streamID == "" {
				rc.streamID = id
			} else if id != rc.streamID {
				data = setJSON(data, strconv.Quote(rc.streamID), "id")
			}
		}
		final = readAnswer(rdOpenAI, data, f.includeUsage).final
		if len(se.Choices) > 0 {
			ch := se.Choices[0]
			if ch.Delta.Role != "" && (ch.Delta.Content == nil || *ch.Delta.Content == "") && len(ch.Delta.ToolCalls) == 0 && ch.FinishReason == nil {
				if rc.roleSent {
					return nil, false
				}
				rc.roleSent = true
			}
			if strip != nil && len(ch.Delta.ToolCalls) > 0 {
				all := true
				for _, tc := range ch.Delta.ToolCalls {
					all = all && strip[tc.Index]
				}
				if all && (ch.Delta.Content == nil || *ch.Delta.Content == "") && ch.FinishReason == nil {
					return nil, false
				}
			}
			if strip[-1] && ch.FinishReason != nil && *ch.FinishReason == "tool_calls" {
				data = setJSON(data, `"stop"`, "choices", 0, "finish_reason")
			}
		}
	case rdAnthropic:
		switch se.Type {
		case "message_start":
			if rc.cont {
				return nil, false
			}
		case "content_block_start":
			if se.Index == nil {
				break
			}
			if strip[*se.Index] {
				return nil, false
			}
			blockMap[*se.Index] = rc.nextIdx
			rc.nextIdx++
			data = setIndex(data, blockMap[*se.Index], *se.Index)
		case "content_block_delta", "content_block_stop":
			if se.Index == nil {
				break
			}
			to, ok := blockMap[*se.Index]
			if !ok {
				return nil, false
			}
			data = setIndex(data, to, *se.Index)
		case "message_delta":
			final = true
			if strip[-1] && se.Delta != nil && se.Delta.StopReason == "tool_use" {
				data = setJSON(data, `"end_turn"`, "delta", "stop_reason")
			}
		}
	}
	if final || isErrorEvent(data) { // the stream ends at an error too
		data = f.rep.inject(data)
	}
	if bytes.Equal(data, ev.data) {
		return ev.raw, true
	}
	// Put the new payload where the old one was.
	i := bytes.Index(ev.raw, ev.data)
	out := make([]byte, 0, len(ev.raw)+len(data))
	out = append(out, ev.raw[:i]...)
	out = append(out, data...)
	return append(out, ev.raw[i+len(ev.data):]...), true
}

// jsonString reads a top-level string field of a JSON object.
func jsonString(data []byte, key string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return ""
	}
	return str(m[key])
}

// setIndex rewrites an event's "index" when it changes.
func setIndex(data []byte, to, from int) []byte {
	if to == from {
		return data
	}
	return setJSON(data, strconv.Itoa(to), "index")
}

// setJSON returns data with the value at path (object keys and array
// indices) replaced by value, a JSON text; data is returned unchanged when
// it is not JSON or the path does not lead to an existing place.
func setJSON(data []byte, value string, path ...any) []byte {
	if len(path) == 0 {
		return []byte(value)
	}
	switch k := path[0].(type) {
	case string:
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil {
			return data
		}
		if _, ok := m[k]; !ok && len(path) > 1 {
			return data
		}
		m[k] = setJSON(m[k], value, path[1:]...)
		if out, err := json.Marshal(m); err == nil {
			return out
		}
	case int:
		var a []json.RawMessage
		if json.Unmarshal(data, &a) != nil || k < 0 || k >= len(a) {
			return data
		}
		a[k] = setJSON(a[k], value, path[1:]...)
		if out, err := json.Marshal(a); err == nil {
			return out
		}
	}
	return data
}

// stripChunkCalls removes context_recall calls from obj[key].tool_calls.
func stripChunkCalls(data []byte, key string) []byte {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return data
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(top[key], &m) != nil {
		return data
	}
	dropRecall(m, "tool_calls")
	top[key], _ = json.Marshal(m)
	out, err := json.Marshal(top)
	if err != nil {
		return data
	}
	return out
}

// failStream ends a stream whose status line the client already has with
// an error in its dialect's in-band shape, carrying the report.
func (rc *recaller) failStream(w http.ResponseWriter, f *fit, msg string) {
	writeInBandError(w, rc.k, f.rep, "upstream_failed", msg)
}
