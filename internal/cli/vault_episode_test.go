package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/vault"
)

// epJSON runs a command with --json that must succeed and decodes its
// output into v.
func epJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out := mustRun(t, append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("ctxkit %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// episodeJSON is the part of an episode's JSON the tests read.
type episodeJSON struct {
	ID                string   `json:"id"`
	Content           string   `json:"content"`
	Entities          []string `json:"entities"`
	Source            string   `json:"source"`
	Salience          float64  `json:"salience"`
	ValidFrom         string   `json:"valid_from"`
	ValidTo           *string  `json:"valid_to"`
	State             string   `json:"state"`
	Supersedes        string   `json:"supersedes"`
	SupersededBy      *string  `json:"superseded_by"`
	Revises           string   `json:"revises"`
	ConfirmedCount    int      `json:"confirmed_count"`
	DisputedWith      []string `json:"disputed_with"`
	VersionRecordedAt string   `json:"version_recorded_at"`
	Metadata          map[string]any
	Score             *float64 `json:"score"`
	Recency           *float64 `json:"recency"`
}

// episodicEnv creates an episodic vault "mem", a semantic vault "kb" and a
// skill vault "sk".
func episodicEnv(t *testing.T) {
	t.Helper()
	vaultEnv(t)
	mustRun(t, "vault", "init", "mem", "--type", "episodic")
	mustRun(t, "vault", "init", "kb")
	mustRun(t, "vault", "init", "sk", "--type", "skill")
}

func writeEpisode(t *testing.T, args ...string) episodeJSON {
	t.Helper()
	var res struct {
		Episode episodeJSON `json:"episode"`
		Hints   []any       `json:"hints"`
	}
	epJSON(t, &res, append([]string{"vault", "write-episode"}, args...)...)
	if res.Episode.ID == "" || res.Hints == nil {
		t.Fatalf("write-episode %v: %+v", args, res)
	}
	return res.Episode
}

func TestVaultEpisodeErrors(t *testing.T) {
	episodicEnv(t)
	open := writeEpisode(t, "mem", "the audit starts in March", "-e", "audit", "--valid-from", "2026-03-01").ID
	closed := writeEpisode(t, "mem", "the office is in Lyon", "--valid-from", "2026-01-01").ID
	mustRun(t, "vault", "invalidate", "mem", closed, "--valid-to", "2026-02-01")
	old := writeEpisode(t, "mem", "the budget is 10k", "--valid-from", "2026-01-01").ID
	mustRun(t, "vault", "supersede", "mem", old, "the budget is 12k", "--valid-from", "2026-04-01")

	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"write: empty content", []string{"write-episode", "mem", "  "}, "invalid episode input: content is empty"},
		{"write: bad time", []string{"write-episode", "mem", "x", "--valid-from", "last tuesday"}, `valid_from "last tuesday" is not a time; use RFC 3339`},
		{"write: bad occurred-at", []string{"write-episode", "mem", "x", "--occurred-at", "2026-13-01"}, `occurred_at "2026-13-01" is not a time`},
		{"write: interval backwards", []string{"write-episode", "mem", "x", "--valid-from", "2026-03-01", "--valid-to", "2026-02-01"}, "is not after valid_from"},
		{"write: salience out of range", []string{"write-episode", "mem", "x", "--salience", "1.5"}, "salience 1.5 is outside 0..1"},
		{"write: confidence out of range", []string{"write-episode", "mem", "x", "--confidence", "-1"}, "confidence -1 is outside 0..1"},
		{"write: bad meta", []string{"write-episode", "mem", "x", "--meta", "novalue"}, "want key=value"},
		{"write: semantic vault", []string{"write-episode", "kb", "x"}, `"kb" is a semantic vault, this needs an episodic vault`},
		{"write: skill vault", []string{"write-episode", "sk", "x"}, `"sk" is a skill vault`},
		{"write: no vault", []string{"write-episode", "nope", "x"}, `no vault named "nope"`},
		{"episodes: relevance without text", []string{"episodes", "mem", "--order-by", "relevance"}, "ordering by relevance needs query text"},
		{"episodes: unknown order", []string{"episodes", "mem", "--order-by", "age"}, `unknown order "age"`},
		{"episodes: bad valid-at", []string{"episodes", "mem", "--valid-at", "soon"}, `valid_at "soon" is not a time`},
		{"episodes: bad known-at", []string{"episodes", "mem", "--known-at", "2026-02-30"}, `known_at "2026-02-30" is not a time`},
		{"episodes: weights without composite", []string{"episodes", "mem", "--w-salience", "2"}, "weights apply to order_by composite only"},
		{"episodes: negative weight", []string{"episodes", "mem", "--order-by", "composite", "--w-recency", "-1"}, "weights must be at least 0"},
		{"episodes: limit", []string{"episodes", "mem", "-n", "500"}, "limit 500 is out of range: give 1 to 200"},
		{"episodes: half-life", []string{"episodes", "mem", "--half-life-days", "0"}, "half_life_days must be more than 0"},
		{"episodes: stats with text", []string{"episodes", "mem", "audit", "--stats"}, "take no TEXT"},
		{"episodes: stats with a filter", []string{"episodes", "mem", "--stats", "-e", "audit"}, "it takes no other filter"},
		{"episodes: entities with -e", []string{"episodes", "mem", "--entities", "-e", "audit"}, "-e does not apply"},
		{"episodes: stats and entities", []string{"episodes", "mem", "--stats", "--entities"}, "none of the others can be"},
		{"episodes: min-episodes alone", []string{"episodes", "mem", "--min-episodes", "2"}, "--min-episodes goes with --entities"},
		{"episodes: semantic vault", []string{"episodes", "kb"}, "is a semantic vault"},
		{"episode: not found", []string{"episode", "mem", "0123"}, "episode not found"},
		{"episode: history not found", []string{"episode", "mem", "0123", "--history"}, "episode not found"},
		{"episode: skill vault", []string{"episode", "sk", open}, "is a skill vault"},
		{"invalidate: closed", []string{"invalidate", "mem", closed}, "episode conflict: episode " + closed + " is already closed"},
		{"invalidate: before valid_from", []string{"invalidate", "mem", open, "--valid-to", "2026-02-01"}, "before the episode's valid_from"},
		{"invalidate: bad time", []string{"invalidate", "mem", open, "--valid-to", "July"}, `valid_to "July" is not a time`},
		{"invalidate: not found", []string{"invalidate", "mem", "0123"}, "episode not found"},
		{"supersede: closed", []string{"supersede", "mem", closed, "the office is in Paris"}, "is already closed"},
		{"supersede: superseded", []string{"supersede", "mem", old, "the budget is 9k"}, "was superseded by"},
		{"supersede: empty content", []string{"supersede", "mem", open, ""}, "content is empty"},
		{"supersede: before valid_from", []string{"supersede", "mem", open, "y", "--valid-from", "2025-01-01"}, "before the episode's valid_from"},
		{"revise: superseded", []string{"revise", "mem", old, "budget: 10k"}, "was superseded by"},
		{"revise: salience", []string{"revise", "mem", open, "y", "--salience", "2"}, "outside 0..1"},
		{"revise: semantic vault", []string{"revise", "kb", open, "y"}, "is a semantic vault"},
		{"confirm: before valid_from", []string{"confirm", "mem", open, "--at", "2026-02-01"}, "before the episode's valid_from"},
		{"confirm: closed", []string{"confirm", "mem", closed}, "is already closed"},
		{"dispute: itself", []string{"dispute", "mem", open, open}, "cannot dispute itself"},
		{"dispute: closed", []string{"dispute", "mem", open, closed}, "is already closed"},
		{"export: semantic vault", []string{"export", "kb"}, "is a semantic vault"},
		{"import: no file", []string{"import", "mem", "missing.jsonl"}, "no such file"},
		{"import: semantic vault", []string{"import", "kb", "-"}, "is a semantic vault"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := ctxkitIn(t, "", append([]string{"vault"}, tc.args...)...)
			if code != 1 || !strings.Contains(errOut, tc.want) {
				t.Errorf("ctxkit vault %s: %d\nstdout: %s\nstderr: %s\nwant stderr with %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
			}
		})
	}
}

// The case a vault that overwrites valid_to gets wrong, through the CLI:
// a statement valid from March 1 is learned, later, to have ended on July
// 12. A query at valid July 20 known before the correction still returns
// it; known after, it does not.
func TestVaultEpisodeLateCorrection(t *testing.T) {
	episodicEnv(t)
	e := writeEpisode(t, "mem", "Dana leads the audit", "-e", "Dana", "-e", "audit", "--valid-from", "2026-03-01", "--source", "standup")
	before := e.VersionRecordedAt // the vault believed it from then on
	if e.ValidTo != nil || e.State != "open" || e.Source != "standup" || strings.Join(e.Entities, ",") != "audit,Dana" {
		t.Fatalf("written: %+v", e)
	}
	out := mustRun(t, "vault", "invalidate", "mem", e.ID, "--valid-to", "2026-07-12", "--reason", "she left on July 12")
	if out != "invalidated "+e.ID+": valid 2026-03-01T00:00:00Z..2026-07-12T00:00:00Z\n" {
		t.Fatalf("invalidate: %q", out)
	}
	for _, tc := range []struct {
		args  []string
		found bool
	}{
		{[]string{"--valid-at", "2026-07-20", "--known-at", before}, true}, // believed then
		{[]string{"--valid-at", "2026-07-20"}, false},                      // known now: it ended
		{[]string{"--valid-at", "2026-07-01"}, true},                       // it held then
		{[]string{"--valid-at", "2026-02-01", "--known-at", before}, false},
		{[]string{}, false}, // now
		{[]string{"--all"}, true},
		{[]string{"dana", "--valid-at", "2026-07-20", "--known-at", before}, true},
		{[]string{"-e", "DANA", "--valid-at", "2026-05-01"}, true},
		{[]string{"-e", "someone", "--valid-at", "2026-05-01"}, false},
	} {
		out := mustRun(t, append([]string{"vault", "episodes", "mem"}, tc.args...)...)
		if strings.Contains(out, e.ID) != tc.found || (!tc.found && out != "no match\n") {
			t.Errorf("episodes %v: found %v, want %v\n%s", tc.args, !tc.found, tc.found, out)
		}
	}
	// The text line shows what the vault believed at that time.
	out = mustRun(t, "vault", "episodes", "mem", "--valid-at", "2026-07-20", "--known-at", before)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ID") ||
		!strings.Contains(lines[1], e.ID+"  2026-03-01T00:00:00Z..  open") || !strings.HasSuffix(lines[1], "Dana leads the audit") {
		t.Errorf("episodes known before the correction:\n%s", out)
	}
	var ms []episodeJSON
	epJSON(t, &ms, "vault", "episodes", "mem", "--valid-at", "2026-07-01", "--order-by", "recency")
	if len(ms) != 1 || ms[0].State != "invalidated" || ms[0].ValidTo == nil || *ms[0].ValidTo != "2026-07-12T00:00:00.000000Z" ||
		ms[0].Score == nil || ms[0].Recency == nil || *ms[0].Score != *ms[0].Recency {
		t.Errorf("episodes --json: %+v", ms)
	}
	var st map[string]int
	epJSON(t, &st, "vault", "episodes", "mem", "--stats", "--known-at", before)
	if st["total"] != 1 || st["open"] != 1 || st["closed"] != 0 {
		t.Errorf("stats known before: %v", st)
	}
	if out := mustRun(t, "vault", "episodes", "mem", "--stats"); out != "total 1\nopen 0\nclosed 1\ndisputed 0\n" {
		t.Errorf("stats now: %q", out)
	}
	out = mustRun(t, "vault", "episode", "mem", e.ID, "--history")
	if !strings.HasPrefix(out, e.ID+" Dana leads the audit\n") || !strings.Contains(out, "2026-03-01T00:00:00Z..2026-07-12T00:00:00Z  invalidated  she left on July 12") ||
		!strings.Contains(out, before) {
		t.Errorf("history:\n%s", out)
	}
	var hist []struct {
		ID       string `json:"id"`
		Versions []struct {
			State    string  `json:"state"`
			ClosedAt *string `json:"closed_at"`
			Note     string  `json:"note"`
		} `json:"versions"`
	}
	epJSON(t, &hist, "vault", "episode", "mem", e.ID, "--history")
	if len(hist) != 1 || len(hist[0].Versions) != 2 || hist[0].Versions[0].State != "open" || hist[0].Versions[0].ClosedAt == nil ||
		hist[0].Versions[1].State != "invalidated" || hist[0].Versions[1].ClosedAt != nil || hist[0].Versions[1].Note != "she left on July 12" {
		t.Errorf("history --json: %+v", hist)
	}
	out = mustRun(t, "vault", "episode", "mem", e.ID)
	for _, want := range []string{"state:", "invalidated (she left on July 12)", "valid:", "2026-03-01T00:00:00Z..2026-07-12T00:00:00Z", "entities:", "audit, Dana", "source:", "standup", "invalidated_at:", "version_recorded_at:", "(seq 2 in the vault)"} {
		if !strings.Contains(out, want) {
			t.Errorf("episode: no %q in\n%s", want, out)
		}
	}
}

func TestVaultEpisodeChanges(t *testing.T) {
	episodicEnv(t)
	// The source defaults to the caller's name.
	limit := writeEpisode(t, "mem", "the API rate limit is 100 requests per minute", "-e", "api", "-e", "billing", "--salience", "0.9", "--meta", "ticket=OPS-7")
	if limit.Salience != 0.9 || limit.Metadata["ticket"] != "OPS-7" || limit.Source != vault.OwnerName {
		t.Fatalf("written: %+v", limit)
	}
	// Write-time hints: text, then JSON; a dry run writes nothing.
	code, out, errOut := ctxkitIn(t, "", "vault", "write-episode", "mem", "The API rate limit is 100 requests per minute.", "-e", "API", "--dry-run")
	if code != 0 || out != "" || !strings.HasPrefix(errOut, "dry run: nothing written\nhint: confirm "+limit.ID+" (similarity 1.00): the same statement again") {
		t.Errorf("dry run: %d\n%s\n%s", code, out, errOut)
	}
	var res struct {
		Episode episodeJSON `json:"episode"`
		Hints   []struct {
			Episode    episodeJSON `json:"episode"`
			Action     string      `json:"action"`
			Similarity float64     `json:"similarity"`
		} `json:"hints"`
		DryRun bool `json:"dry_run"`
	}
	epJSON(t, &res, "vault", "write-episode", "mem", "the API rate limit is 200 requests per minute", "-e", "api", "--dry-run")
	if !res.DryRun || len(res.Hints) != 1 || res.Hints[0].Action != "supersede" || res.Hints[0].Episode.ID != limit.ID {
		t.Errorf("dry run --json: %+v", res)
	}
	if out := mustRun(t, "vault", "episodes", "mem", "--stats"); !strings.HasPrefix(out, "total 1\n") {
		t.Errorf("a dry run wrote: %s", out)
	}
	// A real write prints only its id on stdout, the hints on stderr.
	code, out, errOut = ctxkitIn(t, "", "vault", "write-episode", "mem", "API rate limit: 100 requests per minute, per key", "-e", "api")
	if code != 0 || len(out) != 33 || !strings.HasPrefix(errOut, "hint: revise "+limit.ID) {
		t.Errorf("write with a hint: %d %q %q", code, out, errOut)
	}
	reworded := strings.TrimSpace(out)
	mustRun(t, "vault", "invalidate", "mem", reworded, "--reason", "a test of hints")

	// Supersede inherits entities and salience unless given; -e "" clears.
	var next episodeJSON
	epJSON(t, &next, "vault", "supersede", "mem", limit.ID, "the API rate limit is 200 requests per minute", "--source", "changelog")
	if next.Supersedes != limit.ID || strings.Join(next.Entities, ",") != "api,billing" || next.Salience != 0.9 || next.Source != "changelog" {
		t.Errorf("supersede: %+v", next)
	}
	var old episodeJSON
	epJSON(t, &old, "vault", "episode", "mem", limit.ID)
	if old.State != "superseded" || old.SupersededBy == nil || *old.SupersededBy != next.ID || old.ValidTo == nil || *old.ValidTo != next.ValidFrom {
		t.Errorf("superseded: %+v", old)
	}
	// In text, supersede too prints only the new id on stdout.
	office := writeEpisode(t, "mem", "the office is in Lyon").ID
	code, out, errOut = ctxkitIn(t, "", "vault", "supersede", "mem", office, "the office is in Paris")
	if successor := strings.TrimSuffix(out, "\n"); code != 0 || len(successor) != 32 || strings.Contains(successor, "\n") ||
		!strings.HasPrefix(errOut, "superseded "+office+" from ") {
		t.Errorf("supersede: %d %q %q", code, out, errOut)
	}
	var cleared episodeJSON
	epJSON(t, &cleared, "vault", "supersede", "mem", next.ID, "the API has no rate limit", "-e", "", "--salience", "0.2")
	if cleared.Entities == nil || len(cleared.Entities) != 0 || cleared.Salience != 0.2 {
		t.Errorf("supersede -e '': %+v", cleared)
	}
	// Revise keeps the source; -e replaces the entities. Its stdout is
	// only the new id, so that id=$(ctxkit vault revise ...) works.
	code, out, errOut = ctxkitIn(t, "", "vault", "revise", "mem", cleared.ID, "The API is not rate limited.", "-e", "api")
	revision := strings.TrimSuffix(out, "\n")
	if code != 0 || len(revision) != 32 || strings.Contains(revision, "\n") || !strings.HasPrefix(errOut, "revised "+cleared.ID+" from ") {
		t.Fatalf("revise: %d %q %q", code, out, errOut)
	}
	var rev episodeJSON
	epJSON(t, &rev, "vault", "episode", "mem", revision)
	if rev.Revises != cleared.ID || rev.Source != cleared.Source || strings.Join(rev.Entities, ",") != "api" || rev.ValidFrom != cleared.ValidFrom {
		t.Errorf("revision: %+v", rev)
	}
	// The history is the same chain, oldest first, from any member.
	for _, from := range []string{limit.ID, next.ID, revision} {
		var hist []struct {
			ID string `json:"id"`
		}
		epJSON(t, &hist, "vault", "episode", "mem", from, "--history")
		var got []string
		for _, h := range hist {
			got = append(got, h.ID)
		}
		if strings.Join(got, " ") != strings.Join([]string{limit.ID, next.ID, cleared.ID, revision}, " ") {
			t.Errorf("history from %s: %v", from, got)
		}
	}
	histText := mustRun(t, "vault", "episode", "mem", cleared.ID, "--history")
	if !strings.Contains(histText, "  revises "+cleared.ID) || !strings.Contains(histText, "  supersedes "+limit.ID) {
		t.Errorf("history text:\n%s", histText)
	}
	// Each statement's versions are numbered from 1 in the VERSION column;
	// the vault-wide sequence (the JSON's "version") is under SEQ.
	var chain []struct {
		Versions []struct {
			Version int64 `json:"version"`
		} `json:"versions"`
	}
	epJSON(t, &chain, "vault", "episode", "mem", cleared.ID, "--history")
	var want, got []string
	for _, r := range chain {
		for i, v := range r.Versions {
			want = append(want, fmt.Sprintf("%d %d", i+1, v.Version))
		}
	}
	for _, l := range strings.Split(histText, "\n") {
		if f := strings.Fields(l); len(f) > 2 {
			if _, err := strconv.Atoi(f[0]); err == nil {
				got = append(got, f[0]+" "+f[1])
			}
		}
	}
	if !strings.Contains(histText, "  VERSION  SEQ  RECORDED") || !slices.Equal(got, want) {
		t.Errorf("history versions: got %q, want %q\n%s", got, want, histText)
	}

	// Confirm and dispute.
	out = mustRun(t, "vault", "confirm", "mem", revision, "--source", "docs")
	if !strings.HasPrefix(out, "confirmed "+revision+": 1 confirmation, last ") {
		t.Errorf("confirm: %q", out)
	}
	var conf episodeJSON
	epJSON(t, &conf, "vault", "confirm", "mem", revision, "--at", "2099-01-01T10:00:00+02:00")
	if conf.ConfirmedCount != 2 {
		t.Errorf("confirm --json: %+v", conf)
	}
	other := writeEpisode(t, "mem", "the API allows 50 requests per second", "-e", "api").ID
	out = mustRun(t, "vault", "dispute", "mem", revision, other, "--note", "docs and code disagree")
	if out != "disputed "+revision+" and "+other+"\n" {
		t.Errorf("dispute: %q", out)
	}
	if code, _, errOut := ctxkitIn(t, "", "vault", "dispute", "mem", other, revision); code != 1 || !strings.Contains(errOut, "already disputed") {
		t.Errorf("dispute twice: %d %s", code, errOut)
	}
	var disputed []episodeJSON
	epJSON(t, &disputed, "vault", "episodes", "mem", "--disputed")
	if len(disputed) != 2 || len(disputed[0].DisputedWith) != 1 {
		t.Errorf("--disputed: %+v", disputed)
	}
	if out := mustRun(t, "vault", "episodes", "mem", "--disputed"); strings.Count(out, "open,disputed") != 2 {
		t.Errorf("--disputed text:\n%s", out)
	}
	if out := mustRun(t, "vault", "episodes", "mem", "--stats"); !strings.HasSuffix(out, "disputed 2\n") {
		t.Errorf("stats: %q", out)
	}

	// Entities, and the orders.
	if out := mustRun(t, "vault", "episodes", "mem", "--entities"); out != "api  2\n" {
		t.Errorf("--entities: %q", out)
	}
	var counts []struct {
		Entity   string `json:"entity"`
		Episodes int    `json:"episodes"`
	}
	epJSON(t, &counts, "vault", "episodes", "mem", "--entities", "--all", "--min-episodes", "2")
	if len(counts) != 2 || counts[0].Entity != "api" || counts[0].Episodes != 5 || counts[1].Entity != "billing" {
		t.Errorf("--entities --all --min-episodes 2: %+v", counts)
	}
	var ms []episodeJSON
	epJSON(t, &ms, "vault", "episodes", "mem", "rate", "limited", "--order-by", "composite", "--w-salience", "0")
	if len(ms) == 0 || ms[0].ID != revision {
		t.Errorf("text query: %+v", ms)
	}
	epJSON(t, &ms, "vault", "episodes", "mem", "--order-by", "salience", "-n", "1")
	if len(ms) != 1 {
		t.Errorf("-n 1: %+v", ms)
	}
	if out := mustRun(t, "vault", "episodes", "mem", "--source", "nobody"); out != "no match\n" {
		t.Errorf("no match: %q", out)
	}
	if out := mustRun(t, "vault", "episodes", "mem", "--source", "nobody", "--json"); out != "[]\n" {
		t.Errorf("no match as JSON: %q", out)
	}
}

func TestVaultEpisodeExportImport(t *testing.T) {
	episodicEnv(t)
	mustRun(t, "vault", "init", "copy", "--type", "episodic")
	mustRun(t, "vault", "init", "piped", "--type", "episodic")
	a := writeEpisode(t, "mem", "Dana leads the audit", "-e", "Dana", "--valid-from", "2026-03-01", "--meta", "k=v").ID
	b := writeEpisode(t, "mem", "the audit is remote", "-e", "audit", "--occurred-at", "2026-03-02T09:30:00+01:00").ID
	mustRun(t, "vault", "invalidate", "mem", a, "--valid-to", "2026-07-12", "--reason", "left")
	c := strings.SplitN(mustRun(t, "vault", "supersede", "mem", b, "the audit is on site", "--valid-from", "2026-05-01"), "\n", 2)[0]
	mustRun(t, "vault", "confirm", "mem", c, "--source", "mail")
	d := writeEpisode(t, "mem", "the audit is on site in Lyon", "-e", "audit").ID
	mustRun(t, "vault", "dispute", "mem", c, d)
	mustRun(t, "vault", "revise", "mem", d, "the audit happens on site, in Lyon")

	export := mustRun(t, "vault", "export", "mem")
	if n := strings.Count(export, `"type":"statement"`); n != 5 {
		t.Fatalf("export holds %d statements:\n%s", n, export)
	}
	file := filepath.Join(t.TempDir(), "sub", "mem.jsonl")
	code, out, errOut := ctxkitIn(t, "", "vault", "export", "mem", "-o", file)
	if code != 0 || out != "" || !strings.Contains(errOut, file) {
		t.Fatalf("export -o: %d %s %s", code, out, errOut)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != export {
		t.Fatalf("export -o wrote something else: %v\n%s", err, b)
	}
	if out := mustRun(t, "vault", "import", "copy", file); out != "imported 5 statements into vault \"copy\"\n" {
		t.Errorf("import: %q", out)
	}
	if got := mustRun(t, "vault", "export", "copy"); got != export {
		t.Errorf("export after import differs:\n--- got\n%s--- want\n%s", got, export)
	}
	if code, out, errOut := ctxkitIn(t, export, "vault", "import", "piped", "-"); code != 0 || !strings.Contains(out, "imported 5") {
		t.Errorf("import from stdin: %d %s %s", code, out, errOut)
	}
	if got := mustRun(t, "vault", "export", "piped"); got != export {
		t.Errorf("export after import from stdin differs")
	}
	// Importing again changes nothing and says why.
	if code, _, errOut := ctxkitIn(t, "", "vault", "import", "copy", file); code != 1 || !strings.Contains(errOut, "episode conflict") {
		t.Errorf("import twice: %d %s", code, errOut)
	}
	if code, _, errOut := ctxkitIn(t, "{\"type\":\"version\",\"id\":\"x\"}\n", "vault", "import", "piped", "-"); code != 1 || !strings.Contains(errOut, "line 1") {
		t.Errorf("import of a bad file: %d %s", code, errOut)
	}
	// The imported vault answers the same queries (at fixed valid times:
	// recency is measured from the valid time).
	for _, args := range [][]string{{"--valid-at", "2026-07-01"}, {"--valid-at", "2026-06-01", "--order-by", "salience"}, {"audit", "--valid-at", "2026-05-15"}, {"--disputed", "--valid-at", "2099-01-01"}} {
		want := mustRun(t, append([]string{"vault", "episodes", "mem", "--json"}, args...)...)
		if got := mustRun(t, append([]string{"vault", "episodes", "copy", "--json"}, args...)...); got != want {
			t.Errorf("episodes %v differ after import:\n%s\n%s", args, got, want)
		}
	}
}
