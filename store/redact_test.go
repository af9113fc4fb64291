package store_test

import (
	"testing"

	"github.com/ctxkit/ctxkit/store"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://u:secret@h:5432/db?sslmode=disable", "postgres://u:***@h:5432/db?sslmode=disable"},
		{"postgres://u@h/db", "postgres://u@h/db"},
		{"postgres://h/db?password=secret&sslmode=disable", "postgres://h/db?password=***&sslmode=disable"},
		{"postgres://u:p%40ss@h/db", "postgres://u:***@h/db"},
		{"postgres://u:secret@h:bad port/db", "postgres://***"},
		{"sqlite:/var/x.db", "sqlite:/var/x.db"},
		{"/var/x.db", "/var/x.db"},
	} {
		if got := store.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
