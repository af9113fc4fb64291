package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// maxResponseBytes bounds an embedding response: 2,048 vectors of 4,096
// dimensions written as JSON numbers stay well below it.
const maxResponseBytes = 256 << 20

// ollama embeds with Ollama's POST /api/embed.
type ollama struct {
	spec  Spec
	url   string
	hc    *http.Client
	batch int
}

func newOllama(s Spec, opts Options) *ollama {
	host := strings.TrimRight(opts.Getenv("OLLAMA_HOST"), "/")
	switch {
	case host == "":
		host = "http://127.0.0.1:11434"
	case !strings.Contains(host, "://"):
		host = "http://" + host // OLLAMA_HOST is often host:port
	}
	batch := opts.BatchSize
	if batch <= 0 {
		batch = 64
	}
	return &ollama{spec: s, url: host + "/api/embed", hc: opts.HTTPClient, batch: batch}
}

func (o *ollama) Spec() string { return o.spec.String() }

func (o *ollama) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	var out [][]float32
	for _, batch := range batches(texts, o.batch) {
		// truncate is left at Ollama's default (true): a chunk longer than
		// the model's context is embedded from its head, and is still
		// found in full by lexical search.
		req := map[string]any{"model": o.spec.Model, "input": batch}
		var resp struct {
			Embeddings [][]float32 `json:"embeddings"`
		}
		if err := post(ctx, o.hc, o.url, "", req, &resp); err != nil {
			return nil, fmt.Errorf("%s: %w", o.Spec(), err)
		}
		vectors, err := finish(o.Spec(), len(batch), resp.Embeddings)
		if err != nil {
			return nil, err
		}
		out = append(out, vectors...)
	}
	return out, nil
}

// openAI embeds with an OpenAI-compatible POST /v1/embeddings.
type openAI struct {
	spec  Spec
	url   string
	key   string
	hc    *http.Client
	batch int
}

func newOpenAI(s Spec, opts Options) (*openAI, error) {
	base := strings.TrimRight(opts.Getenv("OPENAI_BASE_URL"), "/")
	if base == "" {
		base = "https://api.openai.com/v1"
	}
	if _, err := url.Parse(base); err != nil {
		return nil, fmt.Errorf("OPENAI_BASE_URL: %w", err)
	}
	batch := opts.BatchSize
	if batch <= 0 {
		batch = 256
	}
	return &openAI{spec: s, url: base + "/embeddings", key: opts.Getenv("OPENAI_API_KEY"), hc: opts.HTTPClient, batch: min(batch, 2048)}, nil
}

func (o *openAI) Spec() string { return o.spec.String() }

func (o *openAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	var out [][]float32
	for _, batch := range batches(texts, o.batch) {
		req := map[string]any{"model": o.spec.Model, "input": batch, "encoding_format": "float"}
		var resp struct {
			Data []struct {
				Index     int       `json:"index"`
				Embedding []float32 `json:"embedding"`
			} `json:"data"`
		}
		if err := post(ctx, o.hc, o.url, o.key, req, &resp); err != nil {
			return nil, fmt.Errorf("%s: %w", o.Spec(), err)
		}
		sort.SliceStable(resp.Data, func(i, j int) bool { return resp.Data[i].Index < resp.Data[j].Index })
		vectors := make([][]float32, len(resp.Data))
		for i, d := range resp.Data {
			if d.Index != i {
				return nil, fmt.Errorf("%s: the server's vectors are not indexed 0..%d", o.Spec(), len(batch)-1)
			}
			vectors[i] = d.Embedding
		}
		vectors, err := finish(o.Spec(), len(batch), vectors)
		if err != nil {
			return nil, err
		}
		out = append(out, vectors...)
	}
	return out, nil
}

// post sends body as JSON and decodes the answer into out. A non-200 answer
// becomes an error carrying the server's own message, in either server's
// shape ({"error":"..."} or {"error":{"message":"..."}}).
func post(ctx context.Context, hc *http.Client, url, key string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s: %s", url, resp.Status, serverMessage(data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode the answer: %w", err)
	}
	return nil
}

// serverMessage extracts the error message of an Ollama or OpenAI error
// body, or returns the start of the body.
func serverMessage(body []byte) string {
	var shaped struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &shaped) == nil && len(shaped.Error) > 0 {
		var text string
		if json.Unmarshal(shaped.Error, &text) == nil {
			return text
		}
		var obj struct {
			Message string `json:"message"`
			Code    any    `json:"code"`
		}
		if json.Unmarshal(shaped.Error, &obj) == nil && obj.Message != "" {
			if obj.Code != nil {
				return fmt.Sprintf("%s (%v)", obj.Message, obj.Code)
			}
			return obj.Message
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
