package store_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStoreKnowsNoPart checks that no package under store/, tests
// included, depends on the engine (offload): the stores serve every part of
// ctxkit, and a part's rules reach them only through package store and
// store/query.
func TestStoreKnowsNoPart(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list dependencies with: %v", err)
	}
	// The test runs in store/, so ./... is every package under it.
	out, err := exec.CommandContext(t.Context(), goTool, "list", "-deps", "-test", "-f", "{{.ImportPath}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list found only %d packages: %q", len(deps), deps)
	}
	for _, dep := range deps {
		if dep == "github.com/ctxkit/ctxkit/offload" || strings.HasPrefix(dep, "github.com/ctxkit/ctxkit/offload/") {
			t.Errorf("a package under store/ depends on %s", dep)
		}
	}
}
