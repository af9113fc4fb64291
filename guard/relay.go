package guard

import (
	"bufio"
	"bytes"
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
func relay(w http.ResponseWriter, resp *http.Response, rep *Report, isFinal func([]byte) bool, observe func([]byte), fin final) error {
	defer resp.Body.Close()
	h := w.Header()
	copyHeaders(h, resp.Header)
	rep.setHeaders(h)
	if !isStream(resp) {
		body, err := readLimited(resp.Body, maxUpstreamBody, "upstream body")
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return err
		}
		if observe != nil {
			observe(body)
		}
		body = fin(body)
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(resp.StatusCode)
		_, err = w.Write(body)
		return err
	}
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	br := bufio.NewReader(resp.Body)
	for {
		line, err := readLine(br)
		if isTooLarge(err) {
			return err
		}
		if len(line) > 0 {
			obj := line
			prefix := []byte(nil)
			if sse {
				obj = nil
				if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok && bytes.HasPrefix(bytes.TrimSpace(rest), []byte("{")) {
					prefix, obj = line[:len(line)-len(rest)], rest
				}
			}
			if len(bytes.TrimSpace(obj)) > 0 {
				if observe != nil {
					observe(obj)
				}
				if isFinal(obj) || isErrorEvent(obj) {
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
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
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
