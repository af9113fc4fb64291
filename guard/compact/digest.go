package compact

import (
	"fmt"
	"strings"
)

// DigestOverBudget is the DigestErr of a span whose digest was dropped
// because the prompt did not fit with it.
const DigestOverBudget = "digest dropped: the prompt did not fit with it"

// digest asks Options.Digest for a digest of a new span and, if there is
// one, makes rec's marker the notice that carries it (rec.plain keeps the
// notice without it until fitDigests is done).
func (e *engine) digest(rec *spanRec, evicted []Message) {
	if e.o.Digest == nil {
		return
	}
	d, err := e.o.Digest(evicted)
	d = strings.TrimSpace(d)
	switch {
	case err != nil:
		rec.digestErr = err.Error()
		return
	case d == "":
		rec.digestErr = "empty digest"
		return
	}
	rec.plain = rec.marker
	rec.marker = digestNotice(rec.marker, d, rec.id)
	rec.summarized = true
}

// digestNotice is a plain notice with a digest inside its brackets, said
// to be a summary and not the original.
func digestNotice(plain, digest, id string) string {
	var b strings.Builder
	b.Grow(len(plain) + len(digest) + 160)
	b.WriteString(strings.TrimSuffix(plain, "]"))
	if id != "" {
		fmt.Fprintf(&b, "\nDigest of what was removed (a summary, not the original; the original is stored as %q, read it for exact details):\n", id)
	} else {
		b.WriteString("\nDigest of what was removed (a summary, not the original, which was not kept):\n")
	}
	b.WriteString(digest)
	b.WriteString("\n]")
	return b.String()
}

// fitDigests drops this call's digests, the longest first, while the
// rendered prompt is over limit: a digest is a bonus that never makes a
// compaction fail. It then forgets the plain notices.
func (e *engine) fitDigests(limit int) {
	for e.total > limit {
		var key [2]int
		best := -1
		for k, r := range e.spanRec {
			if r.plain == "" {
				continue
			}
			if l := len(r.marker); l > best || (l == best && (k[0] < key[0])) {
				best, key = l, k
			}
		}
		if best < 0 {
			break
		}
		r := e.spanRec[key]
		r.marker, r.plain, r.summarized, r.digestErr = r.plain, "", false, DigestOverBudget
		e.spanRec[key] = r
		e.render(true)
	}
	for k, r := range e.spanRec {
		if r.plain != "" {
			r.plain = ""
			e.spanRec[k] = r
		}
	}
}
