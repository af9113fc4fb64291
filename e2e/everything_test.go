package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressLog records the progress notifications a client receives, by token.
type progressLog struct {
	mu      sync.Mutex
	byToken map[string][]*mcp.ProgressNotificationParams
	changed chan struct{} // signalled (without blocking) on each notification
}

func newProgressLog() *progressLog {
	return &progressLog{byToken: make(map[string][]*mcp.ProgressNotificationParams), changed: make(chan struct{}, 1)}
}

func (l *progressLog) handle(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	l.mu.Lock()
	tok := fmt.Sprint(req.Params.ProgressToken)
	l.byToken[tok] = append(l.byToken[tok], req.Params)
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// wait returns the notifications of token once there are at least n.
func (l *progressLog) wait(ctx context.Context, token string, n int) ([]*mcp.ProgressNotificationParams, error) {
	for {
		l.mu.Lock()
		got := append([]*mcp.ProgressNotificationParams(nil), l.byToken[token]...)
		l.mu.Unlock()
		if len(got) >= n {
			return got, nil
		}
		select {
		case <-l.changed:
		case <-ctx.Done():
			return got, fmt.Errorf("%d of %d progress notifications for %s: %w", len(got), n, token, ctx.Err())
		}
	}
}

// TestEverything wraps @modelcontextprotocol/server-everything (stdio) and
// checks that tools, resources, prompts, completions, progress and
// cancellation behave through the wrapper as they do without it.
func TestEverything(t *testing.T) {
	requireNode(t)
	store := isolate(t)
	ctx := testContext(t)
	server := []string{"node", nodeServer("server-everything"), "stdio"}
	directProgress, wrappedProgress := newProgressLog(), newProgressLog()
	direct := mustStartVersion(t, ctx, legacyProtocol, &mcp.ClientOptions{ProgressNotificationHandler: directProgress.handle}, server[0], server[1:]...)
	wrapped := mustStartVersion(t, ctx, legacyProtocol, &mcp.ClientOptions{ProgressNotificationHandler: wrappedProgress.handle},
		ctxkitBin, wrapArgs(store, []string{"--name", "everything"}, server...)...)
	compareEverything(t, direct, wrapped, directProgress, wrappedProgress)
}

// compareEverything runs the comparisons of TestEverything on two sessions.
func compareEverything(t *testing.T, direct, wrapped *mcp.ClientSession, directProgress, wrappedProgress *progressLog) {

	t.Run("instructions", func(t *testing.T) {
		want := direct.InitializeResult().Instructions
		got := wrapped.InitializeResult().Instructions
		if want == "" {
			t.Fatal("the upstream has no instructions to compare")
		}
		if !strings.Contains(got, want) {
			t.Errorf("the wrapper's instructions do not contain the upstream's (%d chars); got:\n%.500s", len(want), got)
		}
		if !strings.Contains(got, "result_") {
			t.Errorf("the wrapper's instructions do not name the exploration tools:\n%.500s", got)
		}
	})

	t.Run("tools", func(t *testing.T) {
		ctx := testContext(t)
		announced := sameTools(t, ctx, direct, wrapped, capabilityTools...)
		for _, c := range []struct {
			name string
			args map[string]any
		}{
			{"echo", map[string]any{"message": "hello through the wrapper"}},
			{"get-sum", map[string]any{"a": 2, "b": 40.5}},
			{"get-structured-content", map[string]any{"location": "Chicago"}},
			{"get-tiny-image", map[string]any{}},
			{"get-annotated-message", map[string]any{"messageType": "success", "includeImage": true}},
			{"get-resource-links", map[string]any{"count": 2}},
			{"get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 3}},
		} {
			t.Run(c.name, func(t *testing.T) {
				want, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args})
				if err != nil {
					t.Fatalf("direct: %v", err)
				}
				got, err := wrapped.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args})
				if err != nil {
					t.Fatalf("wrapped: %v", err)
				}
				if a, b := stripTimes(asJSON(t, want)), stripTimes(asJSON(t, got)); a != b {
					t.Errorf("result differs through the wrapper:\n direct: %.2000s\nwrapped: %.2000s", a, b)
				}
				if tl := announced[c.name]; tl != nil {
					checkOutputSchema(t, tl, got)
				}
			})
		}
	})

	t.Run("client capabilities", func(t *testing.T) {
		ctx := testContext(t)
		want, got := tools(t, ctx, direct), tools(t, ctx, wrapped)
		for _, name := range capabilityTools {
			if _, ok := want[name]; !ok {
				if _, ok := got[name]; ok {
					t.Errorf("tool %s is listed through the wrapper but not directly: the upstream saw a client capability this client does not have", name)
				}
			}
		}
	})

	t.Run("resources", func(t *testing.T) {
		ctx := testContext(t)
		want := collect(t, "resources", direct.Resources(ctx, nil))
		if len(want) == 0 {
			t.Fatal("the upstream lists no resources to compare")
		}
		sameListing(t, "resources", want, collect(t, "resources", wrapped.Resources(ctx, nil)),
			func(r *mcp.Resource) string { return r.URI })
		sameListing(t, "resource templates",
			collect(t, "resource templates", direct.ResourceTemplates(ctx, nil)),
			collect(t, "resource templates", wrapped.ResourceTemplates(ctx, nil)),
			func(r *mcp.ResourceTemplate) string { return r.URITemplate })
		for _, r := range want {
			a, err := direct.ReadResource(ctx, &mcp.ReadResourceParams{URI: r.URI})
			if err != nil {
				t.Fatalf("direct read %s: %v", r.URI, err)
			}
			b, err := wrapped.ReadResource(ctx, &mcp.ReadResourceParams{URI: r.URI})
			if err != nil {
				t.Errorf("wrapped read %s: %v", r.URI, err)
				continue
			}
			// Only the contents: the Go SDK behind the wrapper fills
			// cacheScope, a field of a newer protocol version.
			if x, y := asJSON(t, a.Contents), asJSON(t, b.Contents); x != y {
				t.Errorf("read %s differs through the wrapper:\n direct: %.500s\nwrapped: %.500s", r.URI, x, y)
			}
		}
	})

	t.Run("prompts", func(t *testing.T) {
		ctx := testContext(t)
		sameListing(t, "prompts", collect(t, "prompts", direct.Prompts(ctx, nil)), collect(t, "prompts", wrapped.Prompts(ctx, nil)),
			func(p *mcp.Prompt) string { return p.Name })
		for _, p := range []*mcp.GetPromptParams{
			{Name: "simple-prompt"},
			{Name: "args-prompt", Arguments: map[string]string{"city": "Lyon", "state": "Rhône"}},
			{Name: "completable-prompt", Arguments: map[string]string{"department": "Sales", "name": "Eve"}},
		} {
			a, err := direct.GetPrompt(ctx, p)
			if err != nil {
				t.Fatalf("direct get %s: %v", p.Name, err)
			}
			b, err := wrapped.GetPrompt(ctx, p)
			if err != nil {
				t.Errorf("wrapped get %s: %v", p.Name, err)
				continue
			}
			if x, y := asJSON(t, a), asJSON(t, b); x != y {
				t.Errorf("prompt %s differs through the wrapper:\n direct: %s\nwrapped: %s", p.Name, x, y)
			}
		}
	})

	t.Run("completions", func(t *testing.T) {
		ctx := testContext(t)
		params := &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "completable-prompt"},
			Argument: mcp.CompleteParamsArgument{Name: "name", Value: "F"},
			Context:  &mcp.CompleteContext{Arguments: map[string]string{"department": "Sales"}},
		}
		want, err := direct.Complete(ctx, params)
		if err != nil {
			t.Fatalf("direct: %v", err)
		}
		got, err := wrapped.Complete(ctx, params)
		if err != nil {
			t.Fatalf("wrapped: %v", err)
		}
		if a, b := asJSON(t, want), asJSON(t, got); a != b {
			t.Errorf("completion differs through the wrapper:\n direct: %s\nwrapped: %s", a, b)
		}
	})

	t.Run("progress", func(t *testing.T) {
		ctx := testContext(t)
		// Several short operations: the last notification of each is sent
		// just before the response, which is where a proxy can lose it.
		const steps, rounds = 4, 5
		args := map[string]any{"duration": 0.2, "steps": steps}
		var seen [2][]string
		for i, s := range []struct {
			cs  *mcp.ClientSession
			log *progressLog
		}{{direct, directProgress}, {wrapped, wrappedProgress}} {
			for round := range rounds {
				token := fmt.Sprintf("progress-e2e-%d", round)
				params := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: args}
				params.SetProgressToken(token)
				res, err := s.cs.CallTool(ctx, params)
				if err != nil || res.IsError {
					t.Fatalf("session %d, round %d: %v %s", i, round, err, asJSON(t, res))
				}
				got, err := s.log.wait(ctx, token, steps)
				if err != nil {
					t.Fatalf("session %d, round %d: %v", i, round, err)
				}
				for _, p := range got {
					seen[i] = append(seen[i], fmt.Sprintf("%s %v/%v %s", token, p.Progress, p.Total, p.Message))
				}
			}
		}
		if a, b := strings.Join(seen[0], ", "), strings.Join(seen[1], ", "); a != b {
			t.Errorf("progress differs through the wrapper:\n direct: %s\nwrapped: %s", a, b)
		}
	})

	t.Run("cancellation", func(t *testing.T) {
		ctx := testContext(t)
		for i, s := range []struct {
			cs  *mcp.ClientSession
			log *progressLog
		}{{direct, directProgress}, {wrapped, wrappedProgress}} {
			// A call that would run for 50 s, cancelled once its first
			// progress notification shows that the upstream is running it.
			callCtx, cancel := context.WithCancel(ctx)
			token := fmt.Sprintf("cancel-e2e-%d", i)
			params := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 50, "steps": 100}}
			params.SetProgressToken(token)
			done := make(chan error, 1)
			go func() {
				_, err := s.cs.CallTool(callCtx, params)
				done <- err
			}()
			if _, err := s.log.wait(ctx, token, 1); err != nil {
				cancel()
				t.Fatalf("session %d: the long call never reported progress: %v", i, err)
			}
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("session %d: cancelled call returned %v, want context.Canceled", i, err)
				}
			case <-ctx.Done():
				t.Fatalf("session %d: the cancelled call did not return", i)
			}
			// The session keeps serving.
			res := call(t, ctx, s.cs, "echo", map[string]any{"message": "still here"})
			if !strings.Contains(texts(res), "still here") {
				t.Errorf("session %d: echo after cancellation answered %q", i, texts(res))
			}
		}
	})
}

// capabilityTools are the server-everything tools registered only when the
// client declares sampling or elicitation; the Go SDK client of these tests
// declares neither, so the wrapper must not let the upstream see them.
var capabilityTools = []string{"trigger-sampling-request", "trigger-elicitation-request", "trigger-url-elicitation", "trigger-sampling-request-async", "trigger-elicitation-request-async"}

// stripTimes blanks the clock times some server-everything results embed
// (e.g. "created at 10:04:05 AM"), which differ between two calls.
func stripTimes(s string) string {
	return timePattern.ReplaceAllString(s, "<time>")
}
