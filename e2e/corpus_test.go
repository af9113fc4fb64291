package e2e

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// needle is the one sentence placed in the middle of the large document;
// its words appear nowhere else in it.
const needle = "The quartz heron hums beside the copper lighthouse at dawn."

// needleQuery finds the needle with result_search_in_text.
const needleQuery = "quartz heron copper lighthouse"

// proseWords are the vocabulary of the generated prose; none of them is a
// word of the needle.
var proseWords = strings.Fields(`river stone market garden window letter orange silver
	morning evening harbour mountain village teacher student engine ladder basket
	carpet pencil meadow thunder candle blanket bridge castle forest island kettle
	lantern mirror needle pocket ribbon saddle shadow spoon tower valley wagon
	yellow quiet gentle rapid narrow broad ancient modern simple careful bright
	walks carries builds paints opens closes follows watches gathers repairs
	under over near through across behind around within`)

// largeMarkdown returns about size bytes of deterministic markdown prose:
// sections with headings and short paragraphs, with the needle as its own
// paragraph in the middle of the document.
func largeMarkdown(size int) string {
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString("# Field notes\n\n")
	placed := false
	for section := 1; b.Len() < size; section++ {
		fmt.Fprintf(&b, "## Section %d: the %s %s\n\n", section, pick(r), pick(r))
		for range 4 {
			for s := range 3 + r.IntN(4) {
				if s > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(sentence(r))
			}
			b.WriteString("\n\n")
		}
		if !placed && b.Len() >= size/2 {
			b.WriteString(needle + "\n\n")
			placed = true
		}
	}
	return b.String()
}

func pick(r *rand.Rand) string { return proseWords[r.IntN(len(proseWords))] }

func sentence(r *rand.Rand) string {
	n := 6 + r.IntN(8)
	w := make([]string, n)
	for i := range w {
		w[i] = pick(r)
	}
	w[0] = strings.ToUpper(w[0][:1]) + w[0][1:]
	return strings.Join(w, " ") + "."
}

// smallMarkdown is the small file, read through the wrapper unchanged.
const smallMarkdown = "# Notes\n\nA short file: well under the threshold, so the wrapper passes it through.\n\n- one\n- two\n\nUnicode too: café, naïve, 東京, emoji 🎉.\n"
