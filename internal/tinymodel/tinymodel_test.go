package tinymodel_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/tinymodel"
	"github.com/ctxkit/ctxkit/tokenizer"
)

var update = flag.Bool("update", false, "rewrite testdata/digests.json")

// ggufFile is what readGGUF finds in a file.
type ggufFile struct {
	meta    map[string]any
	tensors map[string][]uint64 // name → dims
	// dataSize is the size of the data section as the tensor infos give it.
	dataSize, fileSize int
}

// readGGUF parses a GGUF v3 file after the format's specification
// (ggml's docs/gguf.md), independently of the writer: every metadata value,
// every tensor info, and the data section's extent, which must end the
// file.
func readGGUF(t *testing.T, b []byte) ggufFile {
	t.Helper()
	r := bytes.NewReader(b)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("gguf at byte %d: %s", len(b)-r.Len(), fmt.Sprintf(format, args...))
	}
	read := func(v any) {
		t.Helper()
		if err := binary.Read(r, binary.LittleEndian, v); err != nil {
			fail("%v", err)
		}
	}
	str := func() string {
		var n uint64
		read(&n)
		if n > uint64(r.Len()) {
			fail("string of %d bytes", n)
		}
		s := make([]byte, n)
		read(s)
		return string(s)
	}
	var scalar func(typ uint32) any
	scalar = func(typ uint32) any {
		switch typ {
		case 4:
			var v uint32
			read(&v)
			return v
		case 5:
			var v int32
			read(&v)
			return v
		case 6:
			var v float32
			read(&v)
			return v
		case 7:
			var v uint8
			read(&v)
			if v > 1 {
				fail("bool %d", v)
			}
			return v == 1
		case 8:
			return str()
		case 9:
			var et uint32
			var n uint64
			read(&et)
			read(&n)
			out := make([]any, n)
			for i := range out {
				out[i] = scalar(et)
			}
			return out
		}
		fail("value type %d", typ)
		return nil
	}

	magic := make([]byte, 4)
	read(magic)
	if string(magic) != "GGUF" {
		fail("magic %q", magic)
	}
	var version uint32
	var nTensors, nMeta uint64
	read(&version)
	read(&nTensors)
	read(&nMeta)
	if version != 3 {
		fail("version %d", version)
	}
	f := ggufFile{meta: map[string]any{}, tensors: map[string][]uint64{}, fileSize: len(b)}
	for range nMeta {
		k := str()
		var typ uint32
		read(&typ)
		if _, dup := f.meta[k]; dup {
			fail("key %s twice", k)
		}
		f.meta[k] = scalar(typ)
	}
	end := 0
	for range nTensors {
		name := str()
		var nd uint32
		read(&nd)
		dims := make([]uint64, nd)
		n := uint64(1)
		for i := range dims {
			read(&dims[i])
			n *= dims[i]
		}
		var typ uint32
		var off uint64
		read(&typ)
		read(&off)
		if typ != 0 {
			fail("tensor %s: type %d, want F32 (0)", name, typ)
		}
		if off%32 != 0 || int(off) < end {
			fail("tensor %s: offset %d (previous data ends at %d)", name, off, end)
		}
		end = int(off + 4*n)
		f.tensors[name] = dims
	}
	start := len(b) - r.Len()
	start = (start + 31) / 32 * 32
	f.dataSize = len(b) - start
	if end > f.dataSize || f.dataSize-end >= 32 {
		fail("data section of %d bytes, tensors end at %d", f.dataSize, end)
	}
	return f
}

func model(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tinymodel.WriteGGUF(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func strs(t *testing.T, v any) []string {
	t.Helper()
	a, ok := v.([]any)
	if !ok {
		t.Fatalf("%T, want an array", v)
	}
	out := make([]string, len(a))
	for i, x := range a {
		out[i] = x.(string)
	}
	return out
}

// TestGGUF checks the file's structure and the metadata llama.cpp's llama
// loader and Ollama read.
func TestGGUF(t *testing.T) {
	f := readGGUF(t, model(t))
	want := map[string]any{
		"general.architecture":          "llama",
		"llama.context_length":          uint32(8192),
		"llama.embedding_length":        uint32(64),
		"llama.block_count":             uint32(2),
		"llama.attention.head_count":    uint32(4),
		"llama.attention.head_count_kv": uint32(4),
		"tokenizer.ggml.model":          "gpt2",
		"tokenizer.ggml.pre":            "gpt-2",
		"tokenizer.ggml.add_bos_token":  false,
	}
	for k, v := range want {
		if f.meta[k] != v {
			t.Errorf("%s = %#v, want %#v", k, f.meta[k], v)
		}
	}
	tokens := strs(t, f.meta["tokenizer.ggml.tokens"])
	if n := f.meta["llama.vocab_size"]; n != uint32(len(tokens)) {
		t.Errorf("llama.vocab_size %v, %d tokens", n, len(tokens))
	}
	eos := int(f.meta["tokenizer.ggml.eos_token_id"].(uint32))
	bos := int(f.meta["tokenizer.ggml.bos_token_id"].(uint32))
	if tokens[eos] != "<|im_end|>" || tokens[bos] != "<|endoftext|>" {
		t.Errorf("eos %q, bos %q", tokens[eos], tokens[bos])
	}
	types := f.meta["tokenizer.ggml.token_type"].([]any)
	for i, tok := range tokens {
		control := strings.HasPrefix(tok, "<|") && len(tok) > 4
		if want := map[bool]int32{false: 1, true: 3}[control]; types[i] != want {
			t.Errorf("token %d %q: type %v, want %d", i, tok, types[i], want)
		}
	}
	v := uint64(len(tokens))
	shapes := map[string][]uint64{
		"token_embd.weight":  {64, v},
		"output.weight":      {64, v},
		"output_norm.weight": {64},
	}
	for l := range 2 {
		p := fmt.Sprintf("blk.%d.", l)
		for _, n := range []string{"attn_q", "attn_k", "attn_v", "attn_output"} {
			shapes[p+n+".weight"] = []uint64{64, 64}
		}
		shapes[p+"attn_norm.weight"] = []uint64{64}
		shapes[p+"ffn_norm.weight"] = []uint64{64}
		shapes[p+"ffn_gate.weight"] = []uint64{64, 128}
		shapes[p+"ffn_up.weight"] = []uint64{64, 128}
		shapes[p+"ffn_down.weight"] = []uint64{128, 64}
	}
	if len(f.tensors) != len(shapes) {
		t.Errorf("%d tensors, want %d", len(f.tensors), len(shapes))
	}
	for name, dims := range shapes {
		if got := f.tensors[name]; fmt.Sprint(got) != fmt.Sprint(dims) {
			t.Errorf("tensor %s: dims %v, want %v", name, got, dims)
		}
	}
}

// hfTokenizer is the part of a tokenizer.json the comparison reads.
type hfTokenizer struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Model struct {
		Type   string         `json:"type"`
		Vocab  map[string]int `json:"vocab"`
		Merges []string       `json:"merges"`
	} `json:"model"`
}

// TestTokenizerJSONMatchesGGUF: the tokenizer.json has the GGUF file's
// vocabulary, ids and merges, so package tokenizer counts what llama.cpp
// counts.
func TestTokenizerJSONMatchesGGUF(t *testing.T) {
	f := readGGUF(t, model(t))
	tokens := strs(t, f.meta["tokenizer.ggml.tokens"])
	merges := strs(t, f.meta["tokenizer.ggml.merges"])
	var hf hfTokenizer
	if err := json.Unmarshal(tinymodel.TokenizerJSON(), &hf); err != nil {
		t.Fatal(err)
	}
	if hf.Model.Type != "BPE" {
		t.Errorf("model type %q", hf.Model.Type)
	}
	byID := map[int]string{}
	for tok, id := range hf.Model.Vocab {
		byID[id] = tok
	}
	for _, a := range hf.AddedTokens {
		if !a.Special {
			t.Errorf("added token %q not special", a.Content)
		}
		if _, dup := byID[a.ID]; dup {
			t.Errorf("id %d twice", a.ID)
		}
		byID[a.ID] = a.Content
	}
	if len(byID) != len(tokens) {
		t.Fatalf("tokenizer.json has %d tokens, the GGUF %d", len(byID), len(tokens))
	}
	for id, tok := range tokens {
		if byID[id] != tok {
			t.Fatalf("id %d: tokenizer.json %q, GGUF %q", id, byID[id], tok)
		}
	}
	if strings.Join(hf.Model.Merges, "\n") != strings.Join(merges, "\n") {
		t.Errorf("merges differ (%d in tokenizer.json, %d in the GGUF)", len(hf.Model.Merges), len(merges))
	}
	if len(merges) < 1000 {
		t.Errorf("%d merges", len(merges))
	}
}

// unbyte maps GPT-2's byte characters back to bytes, as the ByteLevel
// decoder does: printable Latin-1 stands for itself, U+0100 upwards for the
// other bytes in order.
func unbyte(t *testing.T, tok string) []byte {
	t.Helper()
	var others []byte
	for b := 0; b < 256; b++ {
		if !(b >= '!' && b <= '~' || b >= 0xa1 && b <= 0xac || b >= 0xae) {
			others = append(others, byte(b))
		}
	}
	var out []byte
	for _, r := range tok {
		switch {
		case r >= 0x100 && int(r-0x100) < len(others):
			out = append(out, others[r-0x100])
		case r < 0x100:
			out = append(out, byte(r))
		default:
			t.Fatalf("token %q: rune %U is no byte", tok, r)
		}
	}
	return out
}

func load(t *testing.T) (*tokenizer.Tokenizer, []string) {
	t.Helper()
	tk, err := tokenizer.Parse(tinymodel.TokenizerJSON())
	if err != nil {
		t.Fatal(err)
	}
	return tk, strs(t, readGGUF(t, model(t)).meta["tokenizer.ggml.tokens"])
}

// TestEncodeDecodes: package tokenizer encodes texts into tokens whose
// bytes are the text again, and splits out the control tokens.
func TestEncodeDecodes(t *testing.T) {
	tk, tokens := load(t)
	for _, text := range []string{
		"The quick brown fox jumps over the lazy dog.",
		"func main() {\n\tfmt.Println(\"héllo, 世界\")\n}\n",
		"\x00\x01ÿ\u00ad tabs\t\tand   spaces\n\n",
		"<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n",
	} {
		var got []byte
		for _, id := range tk.Encode(text) {
			if strings.HasPrefix(tokens[id], "<|") && len(tokens[id]) > 4 {
				got = append(got, tokens[id]...)
				continue
			}
			got = append(got, unbyte(t, tokens[id])...)
		}
		if string(got) != text {
			t.Errorf("%q decodes to %q", text, got)
		}
	}
	ids := tk.Encode("<|im_start|>user\nhi<|im_end|>")
	if tokens[ids[0]] != tinymodel.IMStart || tokens[ids[len(ids)-1]] != tinymodel.IMEnd {
		t.Errorf("control tokens not split out: %v", ids)
	}
}

// TestBytesPerToken: the model counts English as real BPE models do, at
// about three bytes a token (GPT-2's 50,000 merges reach about four), on a
// text the merges were not learned from.
func TestBytesPerToken(t *testing.T) {
	tk, _ := load(t)
	text, err := os.ReadFile(filepath.Join("testdata", "heldout.txt"))
	if err != nil {
		t.Fatal(err)
	}
	perToken := float64(len(text)) / float64(tk.Count(string(text)))
	if perToken < 2.5 || perToken > 4 {
		t.Errorf("%.2f bytes a token on held-out English, want 2.5 to 4", perToken)
	}
	t.Logf("%.2f bytes a token", perToken)
}

// TestDeterministic: the files are the same bytes on every call and on
// every build (testdata/digests.json; go test -update rewrites it after an
// intended change of the model).
func TestDeterministic(t *testing.T) {
	sum := func(b []byte) string {
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:])
	}
	a, b := model(t), model(t)
	if !bytes.Equal(a, b) {
		t.Fatal("two calls wrote different models")
	}
	got := map[string]string{"model.gguf": sum(a), "tokenizer.json": sum(tinymodel.TokenizerJSON())}
	path := filepath.Join("testdata", "digests.json")
	if *update {
		out, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	for k, v := range got {
		if want[k] != v {
			t.Errorf("%s: sha256 %s, testdata says %s (go test -update after an intended change)", k, v, want[k])
		}
	}
}

// TestWriteError: a failing writer's error is returned.
func TestWriteError(t *testing.T) {
	err := tinymodel.WriteGGUF(failWriter{})
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("error %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("disk full") }

var _ io.Writer = failWriter{}

// TestWeightsFinite: every weight is a finite number in a small range.
func TestWeightsFinite(t *testing.T) {
	b := model(t)
	f := readGGUF(t, b)
	data := b[len(b)-f.dataSize:]
	for i := 0; i+4 <= len(data); i += 4 {
		x := math.Float32frombits(binary.LittleEndian.Uint32(data[i:]))
		if math.IsNaN(float64(x)) || x < -1 || x > 1 {
			t.Fatalf("weight at %d is %v", i, x)
		}
	}
}
