package guard

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/guard/compact"
	"github.com/ctxkit/ctxkit/offload"
	"github.com/ctxkit/ctxkit/store/memstore"
)

// TestRecallReadsOwnSpansOnly: the context_recall tool reads back only
// spans the guard stored; another producer's workspace under an evicted_
// id is "nothing stored", and its content never reaches the model.
func TestRecallReadsOwnSpansOnly(t *testing.T) {
	ctx := context.Background()
	engine := offload.New(memstore.New(memstore.Options{}))
	if _, err := engine.Put(ctx, []byte(`[{"Role":"user","Text":"hunter2"}]`), offload.PutOptions{Type: evictedType, Producer: "someone-else", ID: "evicted_forged"}); err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Ollama: "http://127.0.0.1:1", Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	own, err := g.storeFunc(ctx)([]compact.Message{{Role: compact.RoleUser, Text: "the guard's own span"}})
	if err != nil {
		t.Fatal(err)
	}
	f := &fit{rep: &Report{Budget: 1000}, cnt: counter{scale: 1, c: compact.CounterFunc(Estimate)}}
	for id, want := range map[string]string{"evicted_forged": "nothing is stored", own: "the guard's own span"} {
		args, _ := json.Marshal(map[string]string{"id": id})
		text, _ := g.recallResult(ctx, f, &call{Name: RecallTool, Args: args})
		if !strings.Contains(text, want) || strings.Contains(text, "hunter2") {
			t.Errorf("%s: %q, want %q", id, text, want)
		}
	}
}
