package episodictest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/vault/episodic"
)

// benchWords is the vocabulary of generated statements; words early in
// the list are drawn more often (a Zipf law, as in real text).
var benchWords = strings.Fields(`the of and to in is for on that with as by deploy service customer
invoice contract renewal meeting budget release incident latency database migration outage pricing
discount region cluster owner manager team roadmap launch quarter target risk approval vendor audit
policy access token backup restore schedule ticket escalation priority support onboarding training
hiring review feedback metric revenue churn forecast capacity storage network firewall certificate`)

// BenchWords returns the vocabulary of Statements, most frequent first;
// the benchmarks' text queries draw from it past the first ten.
func BenchWords() []string { return benchWords }

// Statements generates the statements of the episodic benchmarks, the
// same on every store for the same seeds: 8 to 17 words of BenchWords,
// one or (one time in three) two entities, valid from a time in the two
// years before now and, one time in ten, valid for up to 90 days.
type Statements struct {
	r   *rand.Rand
	z   *rand.Zipf
	now time.Time
}

// NewStatements returns a generator seeded by seed1 and seed2.
func NewStatements(seed1, seed2 uint64, now time.Time) *Statements {
	r := rand.New(rand.NewPCG(seed1, seed2))
	return &Statements{r: r, z: rand.NewZipf(r, 1.1, 2, uint64(len(benchWords)-1)), now: now}
}

// Next returns a statement naming entities among "entity-0" to
// "entity-<entities-1>".
func (g *Statements) Next(entities int) episodic.Write {
	r := g.r
	n := 8 + r.IntN(10)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = benchWords[g.z.Uint64()]
	}
	from := g.now.Add(-time.Duration(r.Int64N(int64(730 * 24 * time.Hour))))
	w := episodic.Write{
		Content:   strings.Join(ws, " "),
		Entities:  []string{fmt.Sprintf("entity-%d", r.IntN(entities))},
		ValidFrom: &from,
	}
	if r.IntN(3) == 0 {
		w.Entities = append(w.Entities, fmt.Sprintf("entity-%d", r.IntN(entities)))
	}
	if r.IntN(10) == 0 {
		to := from.Add(time.Duration(1 + r.Int64N(int64(90*24*time.Hour))))
		w.ValidTo = &to
	}
	return w
}
