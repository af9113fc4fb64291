package mcpwrap

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// interceptor finds, in messages still in wire form, the results of the
// wrapper's own tools/call requests (those carrying a progress token of
// ours), and hands the large ones to a resultHook, so that they are stored
// from their bytes rather than decoded by the SDK. One serves one upstream
// connection: request ids are only unique within one.
type interceptor struct {
	onResult resultHook
	calls    sync.Map // request id key → progress token
}

// noteRequest remembers a tools/call request that carries one of the
// wrapper's progress tokens.
func (ic *interceptor) noteRequest(req *jsonrpc.Request) {
	if req.Method != "tools/call" || !req.ID.IsValid() {
		return
	}
	var p struct {
		Meta struct {
			ProgressToken any `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	if tok, ok := p.Meta.ProgressToken.(string); ok && strings.HasPrefix(tok, tokenPrefix) {
		ic.calls.Store(idKey(req.ID.Raw()), tok)
	}
}

// forget drops what was noted for the request id, once it is answered.
func (ic *interceptor) forget(id any) { ic.calls.Delete(idKey(id)) }

// rewrite returns message with the result replaced, and true, when it is
// the large result of a noted call that the hook offloads; otherwise it
// returns message itself.
func (ic *interceptor) rewrite(message []byte) ([]byte, bool) {
	if len(message) < interceptMin || ic.onResult == nil {
		return message, false
	}
	fields, ok := jsonscan.ObjectSpans(message)
	if !ok {
		return message, false
	}
	id, hasID := fields["id"]
	result, hasResult := fields["result"]
	if !hasID || !hasResult {
		return message, false
	}
	var raw any
	if err := json.Unmarshal(message[id.Start:id.End], &raw); err != nil {
		return message, false
	}
	if f, ok := raw.(float64); ok {
		raw = int64(f)
	}
	tok, ok := ic.calls.LoadAndDelete(idKey(raw))
	if !ok {
		return message, false
	}
	replace := ic.onResult(tok.(string), message[result.Start:result.End])
	if replace == nil {
		return message, false
	}
	// From here on only the small parts around the result are kept, so
	// that the message can be collected while the result is stored.
	head, tail := bytes.Clone(message[:result.Start]), bytes.Clone(message[result.End:])
	return slices.Concat(head, replace(), tail), true
}

// idKey makes request ids comparable across their Go and wire forms.
func idKey(raw any) string {
	switch v := raw.(type) {
	case int64:
		return "n:" + strconv.FormatInt(v, 10)
	case string:
		return "s:" + v
	}
	return fmt.Sprint(raw)
}

// interceptTransport applies an interceptor to HTTP upstreams: it notes the
// tools/call requests POSTed and rewrites the responses, whether a JSON body
// (streamable HTTP) or server-sent events (streamable HTTP streams and the
// legacy SSE transport), before the SDK reads them.
type interceptTransport struct {
	base http.RoundTripper
	ic   *interceptor
}

func (t *interceptTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		// Only a tools/call is noted; other requests are not decoded twice.
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			if msg, err := jsonrpc.DecodeMessage(body); err == nil {
				if r, ok := msg.(*jsonrpc.Request); ok {
					t.ic.noteRequest(r)
				}
			}
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.ContentLength = int64(len(body))
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	switch ct := resp.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "application/json") && resp.ContentLength >= 0 && resp.ContentLength < interceptMin:
		// Too small to hold a result worth storing: left for the SDK as it is.
	case strings.HasPrefix(ct, "application/json"):
		body, err := readLine(bufio.NewReaderSize(resp.Body, 64<<10), MaxMessageBytes)
		resp.Body.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read the server's response: %w", err)
		}
		body, _ = t.ic.rewrite(bytes.TrimSpace(body))
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Del("Content-Length")
	case strings.HasPrefix(ct, "text/event-stream"):
		resp.Body = rewriteEvents(resp.Body, t.ic)
	}
	return resp, nil
}

// rewriteEvents passes an event stream through, rewriting the large data
// lines that hold results of noted calls. A message split over several
// data lines passes as it is.
func rewriteEvents(body io.ReadCloser, ic *interceptor) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		defer body.Close()
		r := bufio.NewReaderSize(body, 64<<10)
		for {
			line, err := readLine(r, MaxMessageBytes)
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok && len(data) >= interceptMin {
				data = bytes.TrimSpace(data)
				if out, ok := ic.rewrite(data); ok {
					line = slices.Concat([]byte("data: "), out, []byte("\n"))
				}
			}
			if len(line) > 0 {
				if _, werr := pw.Write(line); werr != nil {
					return // the reader is gone
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}
