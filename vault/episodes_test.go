package vault

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/vault/episodic"
)

// TestEpisodesThroughTheService: the rules of package episodic, with the
// vault's access control on every operation and every change audited.
func TestEpisodesThroughTheService(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.vault(t, CreateVaultRequest{Name: "mem", Type: Episodic, Restricted: true})
	e.agent(t, "writer")
	e.agent(t, "reader")
	e.agent(t, "stranger")
	e.attach(t, "mem", "writer", false)
	e.attach(t, "mem", "reader", true)
	as := func(name string) Caller {
		c, err := e.svc.ActAs(ctx, Owner(), name)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	writer, reader, stranger := as("writer"), as("reader"), as("stranger")
	w, err := e.svc.WriteEpisode(ctx, writer, "mem", WriteEpisodeRequest{Content: "Alice leads payments", Entities: []string{"Alice"}})
	if err != nil || w.Episode.Source != "writer" || w.Episode.State != episodic.Open {
		t.Fatalf("write: %+v %v", w, err)
	}
	id := w.Episode.ID
	dry, err := e.svc.WriteEpisode(ctx, reader, "mem", WriteEpisodeRequest{Content: "Alice leads payments", Entities: []string{"Alice"}, DryRun: true})
	if err != nil || !dry.DryRun || len(dry.Hints) == 0 || dry.Advice == "" {
		t.Fatalf("a reader's dry run: %+v %v", dry, err)
	}
	_, err = e.svc.WriteEpisode(ctx, reader, "mem", WriteEpisodeRequest{Content: "x"})
	wantErr(t, "a reader writes", err, ErrForbidden)
	_, err = e.svc.QueryEpisodes(ctx, stranger, "mem", QueryEpisodesRequest{})
	wantErr(t, "a stranger queries", err, ErrNotFound)
	for _, tc := range []struct {
		req  QueryEpisodesRequest
		want error
	}{
		{QueryEpisodesRequest{Limit: -1}, ErrInvalid}, {QueryEpisodesRequest{Limit: episodic.MaxLimit + 1}, ErrInvalid},
		{QueryEpisodesRequest{HalfLifeDays: new(0.0)}, ErrInvalid}, {QueryEpisodesRequest{HalfLifeDays: new(-1.0)}, ErrInvalid},
		{QueryEpisodesRequest{Weights: &episodic.Weights{Recency: new(2.0)}, OrderBy: "recency"}, ErrInvalid},
		{QueryEpisodesRequest{OrderBy: "relevance"}, ErrInvalid}, {QueryEpisodesRequest{ValidAt: "   "}, ErrInvalid},
		{QueryEpisodesRequest{ValidAt: "yesterday"}, ErrInvalid}, {QueryEpisodesRequest{HalfLifeDays: new(0.5), Limit: 1}, nil},
	} {
		_, err := e.svc.QueryEpisodes(ctx, reader, "mem", tc.req)
		if got := (err != nil && Describe(err).Class == ClassInvalid); got != (tc.want != nil) || (tc.want == nil && err != nil) {
			t.Errorf("query %+v: %v, want %v", tc.req, err, tc.want)
		}
	}
	q, err := e.svc.QueryEpisodes(ctx, reader, "mem", QueryEpisodesRequest{Query: "payments"})
	if err != nil || len(q.Results) != 1 || q.OrderBy != episodic.OrderRelevance || q.Results[0].ID != id {
		t.Fatalf("query: %+v %v", q, err)
	}
	s, err := e.svc.Supersede(ctx, writer, "mem", id, SuccessorRequest{Content: "Bob leads payments", ValidFrom: "2099-06-01"})
	if err != nil || s.Supersedes != id {
		t.Fatalf("supersede: %+v %v", s, err)
	}
	_, err = e.svc.Supersede(ctx, writer, "mem", id, SuccessorRequest{Content: "again"})
	wantErr(t, "supersede a closed episode", err, episodic.ErrConflict)
	_, err = e.svc.Revise(ctx, writer, "mem", s.ID, SuccessorRequest{Content: "Bob runs payments", ValidFrom: "2026-06-01"})
	wantErr(t, "revise with valid_from", err, ErrInvalid)
	h, err := e.svc.EpisodeHistory(ctx, reader, "mem", s.ID)
	if err != nil || len(h.Chain) != 2 {
		t.Fatalf("history: %+v %v", h, err)
	}
	var buf bytes.Buffer
	if err := e.svc.ExportEpisodes(ctx, reader, "mem", &buf); err != nil || !strings.Contains(buf.String(), "Bob leads payments") {
		t.Fatalf("export: %v\n%s", err, buf.String())
	}
	_, err = e.svc.ImportEpisodes(ctx, reader, "mem", &buf)
	wantErr(t, "a reader imports", err, ErrForbidden)
	var actions []string
	for _, ev := range e.audit(t, "mem") {
		actions = append(actions, ev.Agent+":"+ev.Action+":"+ev.Outcome)
	}
	want := "owner:create:ok owner:attach:ok owner:attach:ok writer:write-episode:ok reader:write-episode:refused " +
		"stranger:query-episodes:refused writer:supersede:ok reader:import:refused"
	if strings.Join(actions, " ") != want {
		t.Errorf("audit:\n%s\nwant\n%s", strings.Join(actions, " "), want)
	}
}

// TestReinforceIsAWrite is the regression test of "a read-only agent's MCP
// query_episodes with reinforce: true raises recall_count with no audit
// entry": recording recalls needs write access, in the service, for every
// front end, and is audited.
func TestReinforceIsAWrite(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.vault(t, CreateVaultRequest{Name: "mem", Type: Episodic})
	e.agent(t, "reader")
	e.agent(t, "writer")
	e.attach(t, "mem", "reader", true)
	e.attach(t, "mem", "writer", false)
	reader, _ := e.svc.ActAs(ctx, Owner(), "reader")
	writer, _ := e.svc.ActAs(ctx, Owner(), "writer")
	w, err := e.svc.WriteEpisode(ctx, Owner(), "mem", WriteEpisodeRequest{Content: "the sky is blue"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.QueryEpisodes(ctx, reader, "mem", QueryEpisodesRequest{Reinforce: true})
	wantErr(t, "a reader reinforces", err, ErrForbidden)
	if ep, _ := e.svc.Episode(ctx, Owner(), "mem", w.Episode.ID); ep.RecallCount != 0 {
		t.Fatalf("recall_count %d after a refused reinforce", ep.RecallCount)
	}
	if _, err := e.svc.QueryEpisodes(ctx, writer, "mem", QueryEpisodesRequest{Reinforce: true}); err != nil {
		t.Fatal(err)
	}
	if ep, _ := e.svc.Episode(ctx, Owner(), "mem", w.Episode.ID); ep.RecallCount != 1 {
		t.Fatalf("recall_count %d after a reinforce", ep.RecallCount)
	}
	var got []string
	for _, ev := range e.audit(t, "mem") {
		if ev.Action == "query-episodes" {
			got = append(got, ev.Agent+":"+ev.Outcome+":"+ev.Reason+":"+ev.Detail)
		}
	}
	if strings.Join(got, " ") != "reader:refused:read-only grant: writer:ok::reinforced=1" {
		t.Errorf("audit of the reinforces: %v", got)
	}
}

// TestEpisodicEmbedderIsKept: an episodic vault's statements cannot be
// embedded again, so its embedder changes only while it holds none; a
// read-only agent's reads pin nothing. Before, the change was taken and
// every episode operation then failed with a fix (reindex) that episodic
// vaults do not take.
func TestEpisodicEmbedderIsKept(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.vault(t, CreateVaultRequest{Name: "mem", Type: Episodic, EmbeddingModel: hashSpec})
	reader := e.agent(t, "reader")
	e.attach(t, "mem", "reader", true)
	if _, err := e.svc.QueryEpisodes(ctx, reader, "mem", QueryEpisodesRequest{Query: "anything"}); err != nil {
		t.Fatal(err)
	}
	if _, pinned, _ := e.b.Registry().Pin(ctx, vaultID(t, e, "mem")); pinned {
		t.Error("a read-only agent's query pinned the vault's embedder")
	}
	if _, err := e.svc.SetEmbeddingModel(ctx, Owner(), "mem", "none"); err != nil {
		t.Fatalf("changing the embedder of an empty episodic vault: %v", err)
	}
	if _, err := e.svc.WriteEpisode(ctx, Owner(), "mem", WriteEpisodeRequest{Content: "Alice leads payments", Entities: []string{"Alice"}}); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.SetEmbeddingModel(ctx, Owner(), "mem", hashSpec)
	wantErr(t, "changing the embedder of an episodic vault with statements", err, ErrInvalid)
	if _, err := e.svc.QueryEpisodes(ctx, Owner(), "mem", QueryEpisodesRequest{Query: "Alice"}); err != nil {
		t.Errorf("the vault after the refused change: %v", err)
	}
}

// vaultID returns the registry id of the vault called name.
func vaultID(t *testing.T, e *env, name string) string {
	t.Helper()
	vs, err := e.b.Registry().Vaults(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Name == name {
			return v.ID
		}
	}
	t.Fatalf("no vault %q", name)
	return ""
}
