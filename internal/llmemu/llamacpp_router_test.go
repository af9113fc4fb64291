package llmemu

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestLlamaCppRouter walks router mode's model states: nothing loaded,
// load, autoload by a chat, unload, and the errors.
func TestLlamaCppRouter(t *testing.T) {
	s := NewLlamaCpp(LlamaCppOptions{Router: true, RouterModels: []string{"a.gguf", "b.gguf"}})
	srv := httptest.NewServer(s)
	defer srv.Close()
	states := func() string {
		_, body := get(t, srv.URL+"/models")
		var list struct {
			Data []struct {
				ID     string `json:"id"`
				Status struct {
					Value string `json:"value"`
				} `json:"status"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, m := range list.Data {
			out += fmt.Sprintf("%s=%s ", m.ID, m.Status.Value)
		}
		return out
	}
	for _, step := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"", "", 0, "a.gguf=unloaded b.gguf=unloaded "},
		{"/models/load", `{"model":"a.gguf"}`, 200, "a.gguf=loaded b.gguf=unloaded "},
		{"/models/load", `{"model":"a.gguf"}`, 400, "a.gguf=loaded b.gguf=unloaded "},
		{"/models/load", `{"model":"c.gguf"}`, 400, "a.gguf=loaded b.gguf=unloaded "},
		{"/models/load", `{}`, 400, "a.gguf=loaded b.gguf=unloaded "},
		{"/v1/chat/completions", `{"model":"b.gguf","messages":[{"role":"user","content":"hi"}]}`, 200, "a.gguf=loaded b.gguf=loaded "},
		{"/models/unload", `{"model":"a.gguf"}`, 200, "a.gguf=unloaded b.gguf=loaded "},
		{"/models/unload", `{"model":"a.gguf"}`, 400, "a.gguf=unloaded b.gguf=loaded "},
		{"/models/unload", `{"model":"b.gguf"}`, 200, "a.gguf=unloaded b.gguf=unloaded "},
	} {
		if step.path != "" {
			resp, body := post(t, srv.URL+step.path, step.body)
			if resp.StatusCode != step.status {
				t.Errorf("%s %s: %d %s, want %d", step.path, step.body, resp.StatusCode, body, step.status)
			}
			if step.status == 200 && step.path != "/v1/chat/completions" && string(body) != `{"success":true}` {
				t.Errorf("%s: %s", step.path, body)
			}
		}
		if got := states(); got != step.want {
			t.Errorf("after %s %s: %q, want %q", step.path, step.body, got, step.want)
		}
	}
	if resp, _ := get(t, srv.URL+"/health"); resp.StatusCode != http.StatusOK {
		t.Errorf("router /health: %d", resp.StatusCode)
	}

	// Without router mode, /models is /v1/models: no status, no load.
	plain := httptest.NewServer(NewLlamaCpp(LlamaCppOptions{}))
	defer plain.Close()
	_, body := get(t, plain.URL+"/models")
	var list struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil || len(list.Data) != 1 || list.Data[0]["status"] != nil {
		t.Errorf("plain /models: %s", body)
	}
	if resp, _ := post(t, plain.URL+"/models/load", `{"model":"model.gguf"}`); resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("plain /models/load: %d", resp.StatusCode)
	}
}
