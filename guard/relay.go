package guard

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Upstream bodies are read with bounds, whatever the upstream sends: a
// broken or hostile server must not make the guard allocate without end.
const (
	// maxUpstreamBody bounds a whole upstream body the guard reads (an
	// answer, a model list, a /tokenize result), and what the recall loop
	// holds of one streamed answer.
	maxUpstreamBody = 64 << 20
	// maxUpstreamLine bounds one NDJSON line, or one SSE event, of a
	// stream the guard relays line by line.
	maxUpstreamLine = 16 << 20
)

// tooLargeError is a body, line or event over one of the guard's bounds.
type tooLargeError struct {
	what  string
	limit int
}

func (e *tooLargeError) Error() string { return fmt.Sprintf("%s over %d bytes", e.what, e.limit) }

func isTooLarge(err error) bool {
	var tl *tooLargeError
	return errors.As(err, &tl)
}

// readLimited reads r whole, or fails with a *tooLargeError past limit
// bytes.
func readLimited(r io.Reader, limit int, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if len(data) > limit {
		return nil, &tooLargeError{what: what, limit: limit}
	}
	return data, nil
}

// readLine reads one line, its '\n' included, of at most maxUpstreamLine
// bytes; the error is the reader's (io.EOF after a last line without
// '\n') or a *tooLargeError.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxUpstreamLine {
			return line, &tooLargeError{what: "upstream stream line", limit: maxUpstreamLine}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// final inspects and completes the last object of a response (the whole
// body, Ollama's done chunk, OpenAI's finishing chunk): it returns the
// object with the report injected.
type final func(obj []byte) []byte

// relay copies an upstream response to the client: the report's headers,
// then the body. NDJSON and SSE are relayed line by line and flushed as
// they arrive; isFinal picks the object that gets the report, as does an
// error sent in-band (observe is called on every object, for usage
// counts). Other bodies are read whole and the report injected.
//
// An answer cut short never reaches the client as a whole one: a body
// that ends early (or, said to be JSON, is not whole JSON) is a 502 with
// the report, and a successful stream that ends before the last event of
// its dialect k (lastEvent) or an in-band error ends with the dialect's
// in-band error carrying the report (a fragment of a line is not
// forwarded). Either way relay returns a *cutError, for the caller to log
// and count (relayEnded).
func relay(w http.ResponseWriter, resp *http.Response, rep *Report, k rdKind, isFinal func([]byte) bool, observe func([]byte), fin final) error {
	defer resp.Body.Close()
	h := w.Header()
	if !isStream(resp) {
		body, err := readWhole(resp)
		if err != nil {
			return failBody(w, resp, rep, err)
		}
		copyHeaders(h, resp.Header)
		rep.setHeaders(h)
		if observe != nil {
			observe(body)
		}
		body = fin(body)
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(resp.StatusCode)
		_, err = w.Write(body)
		return err
	}
	copyHeaders(h, resp.Header)
	rep.setHeaders(h)
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	br := bufio.NewReader(resp.Body)
	// Only a successful stream promises to reach its last event.
	ended := resp.StatusCode >= 300
	for {
		line, err := readLine(br)
		if isTooLarge(err) {
			return cutStream(w, resp, rep, k, err)
		}
		line, err = wholeLine(line, err, sse)
		if len(line) > 0 {
			obj := line
			prefix := []byte(nil)
			if sse {
				obj = nil
				if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
					if lastEvent(k, rest) {
						ended = true
					}
					if bytes.HasPrefix(bytes.TrimSpace(rest), []byte("{")) {
						prefix, obj = line[:len(line)-len(rest)], rest
					}
				}
			} else if lastEvent(k, obj) {
				ended = true
			}
			if len(bytes.TrimSpace(obj)) > 0 {
				if observe != nil {
					observe(obj)
				}
				errorEvent := isErrorEvent(obj)
				ended = ended || errorEvent
				if isFinal(obj) || errorEvent {
					line = append(prefix, fin(obj)...)
				}
			}
			if _, werr := w.Write(line); werr != nil {
				return werr
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err == nil {
			continue
		}
		if ended {
			return nil // a read error after the last event loses nothing
		}
		if errors.Is(err, io.EOF) {
			err = errors.New("the stream ended before its last event")
		}
		return cutStream(w, resp, rep, k, err)
	}
}

// readWhole reads a whole (not streamed) upstream body: an error when it
// is over maxUpstreamBody, ends early, or, said to be JSON in a
// successful answer, is not whole JSON (a connection closed in its
// middle).
func readWhole(resp *http.Response) ([]byte, error) {
	body, err := readLimited(resp.Body, maxUpstreamBody, "upstream body")
	if err == nil && resp.StatusCode < 300 && isJSONBody(resp) && !json.Valid(body) {
		err = fmt.Errorf("upstream body of %d bytes is not whole JSON", len(body))
	}
	return body, err
}

// cutError is an upstream answer that ended early, told to the client.
type cutError struct{ err error }

func (e *cutError) Error() string { return "upstream answer cut: " + e.err.Error() }
func (e *cutError) Unwrap() error { return e.err }

// clientLeft says whether the client of an upstream answer went away
// (its request's context carries the client's; closing the body ends it
// too, with errBodyClosed).
func clientLeft(resp *http.Response) bool {
	if resp.Request == nil {
		return false
	}
	ctx := resp.Request.Context()
	return ctx.Err() != nil && !errors.Is(context.Cause(ctx), errBodyClosed)
}

// failBody answers a whole (not streamed) upstream body that could not be
// read whole: 502 with the report.
func failBody(w http.ResponseWriter, resp *http.Response, rep *Report, err error) error {
	if clientLeft(resp) {
		return err
	}
	typ, msg := "upstream_cut", "the upstream's answer was cut short: "+err.Error()
	if isTooLarge(err) {
		typ, msg = "upstream_too_large", "the upstream's answer is too large to relay: "+err.Error()
	}
	rep.UpstreamCut = true
	writeError(w, http.StatusBadGateway, typ, msg, rep)
	return &cutError{err}
}

// cutStream ends a stream the upstream cut (or whose line was over the
// bound) with the dialect's in-band error, carrying the report.
func cutStream(w http.ResponseWriter, resp *http.Response, rep *Report, k rdKind, err error) error {
	if clientLeft(resp) {
		return err
	}
	typ, msg := "upstream_cut", "the upstream's stream was cut before its end ("+err.Error()+"): the answer above is incomplete"
	if isTooLarge(err) {
		typ, msg = "upstream_too_large", "the upstream's stream has an event too large to relay ("+err.Error()+"): the answer above is incomplete"
	}
	rep.UpstreamCut = true
	writeInBandError(w, k, rep, typ, msg)
	return &cutError{err}
}

// wholeLine drops the fragment of a line a stream ended in (no '\n', not
// whole JSON nor [DONE]), turning a clean end into an unexpected one; a
// last line that is whole but for its '\n' gets it (and a blank line after
// an SSE event), so that what follows starts on a line of its own.
func wholeLine(line []byte, err error, sse bool) ([]byte, error) {
	if err == nil || len(line) == 0 || line[len(line)-1] == '\n' {
		return line, err
	}
	payload := bytes.TrimSpace(line)
	if sse {
		rest, ok := bytes.CutPrefix(payload, []byte("data:"))
		if !ok {
			return nil, io.ErrUnexpectedEOF
		}
		payload = bytes.TrimSpace(rest)
	}
	if !errors.Is(err, io.EOF) || !(json.Valid(payload) || string(payload) == "[DONE]") {
		return nil, midLine(err)
	}
	if sse {
		return append(line, "\n\n"...), err
	}
	return append(line, '\n'), err
}

// midLine is the error of a stream that ended inside a line.
func midLine(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// lastEvent says whether a stream's payload (an NDJSON line, an SSE
// event's data) is the last its dialect sends: Ollama's object with done
// true, OpenAI's [DONE], Anthropic's message_stop.
func lastEvent(k rdKind, data []byte) bool {
	data = bytes.TrimSpace(data)
	if k == rdOpenAI {
		return string(data) == "[DONE]"
	}
	var ev struct {
		Done bool   `json:"done"`
		Type string `json:"type"`
	}
	if len(data) == 0 || data[0] != '{' || json.Unmarshal(data, &ev) != nil {
		return false
	}
	if k == rdOllama {
		return ev.Done
	}
	return ev.Type == "message_stop"
}

// writeInBandError ends a stream whose status line the client already has
// with an error in its dialect's in-band shape, carrying the report:
// Ollama's {"error":...} line, OpenAI-style data: {"error":{...}} (as
// llama.cpp sends), Anthropic's event: error (type api_error, the one its
// SDKs know for a server fault). Without it the stream would just stop,
// and the client could take a cut answer for a whole one.
func writeInBandError(w http.ResponseWriter, k rdKind, rep *Report, typ, msg string) {
	var obj any
	var prefix, suffix string
	switch k {
	case rdOllama:
		obj, suffix = map[string]string{"error": msg}, "\n"
	case rdOpenAI:
		// The blank line first ends an event left open.
		obj, prefix, suffix = map[string]any{"error": map[string]string{"type": typ, "message": msg}}, "\ndata: ", "\n\n"
	case rdAnthropic:
		obj, prefix, suffix = map[string]any{"type": "error", "error": map[string]string{"type": "api_error", "message": msg}}, "\nevent: error\ndata: ", "\n\n"
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return
	}
	_, _ = w.Write([]byte(prefix + string(rep.inject(data)) + suffix))
	if flusher, ok := w.(http.Flusher); ok {
		flusher.Flush()
	}
}

// isJSONBody says whether an upstream body is said to be JSON.
func isJSONBody(resp *http.Response) bool {
	ct := resp.Header.Get("Content-Type")
	return strings.HasPrefix(ct, "application/json") || strings.HasSuffix(strings.Split(ct, ";")[0], "+json")
}

// copyHeaders copies an upstream response's headers to the client's, but
// those of the upstream connection and body length (the guard's own
// differ).
func copyHeaders(dst, src http.Header) {
	for k, v := range src {
		switch k {
		case "Content-Length", "Connection", "Transfer-Encoding", "Keep-Alive":
			continue
		}
		dst[k] = v
	}
}

// isStream says whether an upstream answer is NDJSON or SSE, relayed line
// by line.
func isStream(resp *http.Response) bool {
	ct := resp.Header.Get("Content-Type")
	return strings.HasPrefix(ct, "application/x-ndjson") || strings.HasPrefix(ct, "text/event-stream")
}

// isErrorEvent says whether a streamed object is an error sent in-band
// (llama.cpp's and SGLang's {"error":...}, Anthropic's {"type":"error"}):
// the stream ends there, so it carries the report.
func isErrorEvent(obj []byte) bool {
	var e struct {
		Error json.RawMessage `json:"error"`
		Type  string          `json:"type"`
	}
	return json.Unmarshal(obj, &e) == nil && (!isNull(e.Error) || e.Type == "error")
}

// jsonInt reads an integer field of a JSON object, following a path of
// keys.
func jsonInt(obj []byte, path ...string) int {
	var cur any
	if err := json.Unmarshal(obj, &cur); err != nil {
		return 0
	}
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return 0
		}
		cur = m[p]
	}
	f, _ := cur.(float64)
	return int(f)
}

// relayEnded logs and counts how a relay ended: an upstream answer cut
// short (the client was told) is a WARN and upstream_cuts_total; a client
// that went away is nothing.
func (g *Guard) relayEnded(r *http.Request, f *fit, err error) {
	var cut *cutError
	switch {
	case errors.As(err, &cut):
		// Counted even when the client left since: it left on the error.
		g.upstreamCut(r, f, cut.err)
	case err != nil && r.Context().Err() == nil:
		g.log.Warn("relay failed", "path", r.URL.Path, "err", err)
	}
}

// upstreamCut logs and counts an upstream answer that ended early.
func (g *Guard) upstreamCut(r *http.Request, f *fit, err error) {
	g.metrics.cuts.WithLabelValues(string(f.b.kind)).Inc()
	g.log.Warn("upstream answer cut short; the client got an error", "backend", f.b.kind, "model", f.model, "path", r.URL.Path, "err", err)
}
