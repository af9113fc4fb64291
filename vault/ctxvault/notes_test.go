package ctxvault

import (
	"fmt"
	"strings"
	"testing"
)

// The note on CtxVault's embeddings counts the episodes that carried one,
// in the singular for one.
func TestRecordsEmbeddedNote(t *testing.T) {
	for _, tc := range []struct {
		embedded int
		want     string
	}{
		{1, "1 episode carried CtxVault's embeddings"},
		{2, "2 episodes carried CtxVault's embeddings"},
	} {
		var rows []Row
		for i := range tc.embedded {
			rows = append(rows, Row{ID: fmt.Sprint(i), Content: "c", Confidence: 1, Salience: 0.5, ValidFrom: "2026-03-01",
				RecordedAt: "2026-03-01", Metadata: "{}", Embedded: true})
		}
		_, notes, err := Records(&DB{Rows: rows})
		if err != nil || len(notes) != 1 || !strings.HasPrefix(notes[0], tc.want) {
			t.Errorf("%d embedded: %q %v, want a note starting %q", tc.embedded, notes, err, tc.want)
		}
	}
}
