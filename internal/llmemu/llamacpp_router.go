package llmemu

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// Router mode, as llama-server serves it when started without -m: GET
// /models answers {"data":[{"id","in_cache","path","status":{"value",
// "args"}}]} with status.value "loaded" or "unloaded", POST /models/load
// and /models/unload take {"model": id} and answer {"success": true}.

func (s *LlamaCpp) initRouter() {
	if len(s.opts.RouterModels) == 0 {
		s.opts.RouterModels = []string{s.opts.Model}
	}
	s.routed = map[string]bool{}
	s.mux.HandleFunc("GET /models", s.routerModels)
	s.mux.HandleFunc("POST /models/load", s.routerLoad(true))
	s.mux.HandleFunc("POST /models/unload", s.routerLoad(false))
}

// RouterLoaded returns router mode's loaded models, in RouterModels
// order.
func (s *LlamaCpp) RouterLoaded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.opts.RouterModels {
		if s.routed[m] {
			out = append(out, m)
		}
	}
	return out
}

func (s *LlamaCpp) routerModels(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	data := make([]map[string]any, 0, len(s.opts.RouterModels))
	for _, m := range s.opts.RouterModels {
		st := map[string]any{"value": "unloaded"}
		if s.routed[m] {
			st = map[string]any{"value": "loaded", "args": []string{"llama-server", "-ctx", "4096"}}
		}
		data = append(data, map[string]any{"id": m, "in_cache": false, "path": "/models/" + strings.ReplaceAll(m, "/", "_"), "status": st})
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, llamaJSON, map[string]any{"data": data})
}

func (s *LlamaCpp) routerLoad(load bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" {
			llamaError(w, http.StatusBadRequest, "\"model\" is required", "invalid_request_error")
			return
		}
		if !slices.Contains(s.opts.RouterModels, req.Model) {
			llamaError(w, http.StatusBadRequest, "model is not found", "invalid_request_error")
			return
		}
		s.mu.Lock()
		was := s.routed[req.Model]
		s.routed[req.Model] = load
		s.mu.Unlock()
		if was == load {
			msg := "model is already loaded"
			if !load {
				msg = "model is not running"
			}
			llamaError(w, http.StatusBadRequest, msg, "invalid_request_error")
			return
		}
		writeJSON(w, http.StatusOK, llamaJSON, map[string]bool{"success": true})
	}
}

// autoload loads the model a router-mode generation request names (the
// first model when it names none).
func (s *LlamaCpp) autoload(r *http.Request, body []byte) {
	if r.Method != http.MethodPost || strings.HasPrefix(r.URL.Path, "/models/") {
		return
	}
	var req struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &req)
	if !slices.Contains(s.opts.RouterModels, req.Model) {
		req.Model = s.opts.RouterModels[0]
	}
	s.mu.Lock()
	s.routed[req.Model] = true
	s.mu.Unlock()
}
