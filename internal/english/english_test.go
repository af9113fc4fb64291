package english

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 chunks"}, {1, "1 chunk"}, {2, "2 chunks"}, {-1, "-1 chunks"}} {
		if got := Count(tc.n, "chunk", "chunks"); got != tc.want {
			t.Errorf("Count(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := Plural(1, "entry", "entries") + " " + Plural(3, "entry", "entries"); got != "entry entries" {
		t.Errorf("Plural: %q", got)
	}
}

func TestA(t *testing.T) {
	for _, tc := range []struct{ word, want string }{
		{"semantic", "a semantic"}, {"skill", "a skill"}, {"episodic", "an episodic"}, {"Episodic", "an Episodic"},
		{"episodic or semantic", "an episodic or semantic"}, {"", "a "},
	} {
		if got := A(tc.word); got != tc.want {
			t.Errorf("A(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}

func TestOr(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{{nil, ""}, {[]string{"a"}, "a"}, {[]string{"a", "b"}, "a or b"}, {[]string{"a", "b", "c"}, "a, b or c"}} {
		if got := Or(tc.in); got != tc.want {
			t.Errorf("Or(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
