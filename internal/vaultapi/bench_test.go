package vaultapi

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/benchdata"
	"github.com/ctxkit/ctxkit/internal/vaultauth"
	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/vaulttest"
)

// BenchmarkQuery is one search over HTTP, the same on /v1 and on
// /ctxvault (whose FastAPI-style decoding and CtxVault shapes come on
// top), over a lexical vault of 500 generated documents on SQLite.
func BenchmarkQuery(b *testing.B) {
	v := vaulttest.New(b, vaulttest.Options{})
	v.Vault(b, vault.CreateVaultRequest{Name: "notes", Scope: vault.Global, EmbeddingModel: "none"})
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		var sb strings.Builder
		for range 300 {
			sb.WriteString(benchdata.Words[r.IntN(len(benchdata.Words))] + " ")
		}
		if _, err := v.Svc.WriteDoc(b.Context(), vault.Owner(), "notes", fmt.Sprintf("doc%03d.md", i), vault.WriteDocRequest{Content: sb.String()}); err != nil {
			b.Fatal(err)
		}
	}
	srv := httptest.NewServer(New(v.Svc, Options{Auth: vaultauth.New(v.Svc, nil)}))
	b.Cleanup(srv.Close)
	q := benchdata.Words[0] + " " + benchdata.Words[1]
	for _, tc := range []struct{ name, path, body string }{
		{"v1", "/v1/vaults/notes/query", `{"query": "` + q + `", "n_results": 5}`},
		{"ctxvault", "/ctxvault/query", `{"vault_name": "notes", "query": "` + q + `", "n_results": 5}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				req, err := http.NewRequestWithContext(b.Context(), "POST", srv.URL+tc.path, strings.NewReader(tc.body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+v.Tokens[vault.OwnerName])
				req.Header.Set("Content-Type", "application/json")
				resp, err := srv.Client().Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("%s: %d %s", tc.path, resp.StatusCode, body)
				}
			}
		})
	}
}
