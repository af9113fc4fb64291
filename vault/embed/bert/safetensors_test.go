package bert

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func rawSafetensors(header string, body []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(out, header...), body...)
}

func TestReadSafetensorsDTypes(t *testing.T) {
	var body []byte
	// F16: 1, -2, 0.5, 65504, smallest subnormal 2^-24, -0, +Inf
	for _, h := range []uint16{0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001, 0x8000, 0x7c00} {
		body = binary.LittleEndian.AppendUint16(body, h)
	}
	// BF16: 1, -3
	for _, h := range []uint16{0x3f80, 0xc040} {
		body = binary.LittleEndian.AppendUint16(body, h)
	}
	// F32: pi
	body = binary.LittleEndian.AppendUint32(body, math.Float32bits(math.Pi))
	hdr := `{"__metadata__":{"format":"pt"},"h":{"dtype":"F16","shape":[7],"data_offsets":[0,14]},` +
		`"b":{"dtype":"BF16","shape":[1,2],"data_offsets":[14,18]},"f":{"dtype":"F32","shape":[],"data_offsets":[18,22]}}`
	ts, err := ReadSafetensors(rawSafetensors(hdr, body))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ts["h"].Data, []float32{1, -2, 0.5, 65504, 1.0 / (1 << 24), float32(math.Copysign(0, -1)), float32(math.Inf(1))}; !slices.Equal(got, want) {
		t.Errorf("F16 = %v, want %v", got, want)
	}
	if math.Signbit(float64(ts["h"].Data[5])) != true {
		t.Errorf("F16 -0 lost its sign")
	}
	if got := ts["b"]; !slices.Equal(got.Data, []float32{1, -3}) || !slices.Equal(got.Shape, []int{1, 2}) {
		t.Errorf("BF16 = %+v", got)
	}
	if got := ts["f"].Data; !slices.Equal(got, []float32{math.Pi}) {
		t.Errorf("F32 = %v", got)
	}
	if f16ToF32(0x7e00) == f16ToF32(0x7e00) {
		t.Errorf("F16 NaN is not NaN")
	}
}

func TestReadSafetensorsErrors(t *testing.T) {
	four := make([]byte, 4)
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"short", []byte{1, 2, 3}},
		{"header past end", binary.LittleEndian.AppendUint64(nil, 1000)},
		{"huge header", binary.LittleEndian.AppendUint64(nil, math.MaxUint64)},
		{"bad json", rawSafetensors(`{"a":`, nil)},
		{"unknown dtype", rawSafetensors(`{"a":{"dtype":"I8","shape":[4],"data_offsets":[0,4]}}`, four)},
		{"offsets past end", rawSafetensors(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, four)},
		{"offsets reversed", rawSafetensors(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}}`, four)},
		{"size mismatch", rawSafetensors(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, four)},
		{"negative dim", rawSafetensors(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, four)},
		{"overflowing shape", rawSafetensors(`{"a":{"dtype":"F32","shape":[2147483647,2147483647,2147483647],"data_offsets":[0,4]}}`, four)},
		{"one offset", rawSafetensors(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}}`, four)},
		{"not an object", rawSafetensors(`{"a":3}`, four)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ReadSafetensors(tt.data); err == nil {
				t.Errorf("no error")
			}
		})
	}
}

func TestWriteReadSafetensors(t *testing.T) {
	in := map[string]Tensor{"x": {DType: "F32", Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, 6}}, "y": {DType: "F32", Shape: []int{1}, Data: []float32{-1}}}
	data, err := WriteSafetensors(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ReadSafetensors(data)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range in {
		got := out[name]
		if !slices.Equal(got.Data, want.Data) || !slices.Equal(got.Shape, want.Shape) {
			t.Errorf("%s = %+v, want %+v", name, got, want)
		}
	}
	if _, err := WriteSafetensors(map[string]Tensor{"bad": {Shape: []int{3}, Data: []float32{1}}}); err == nil {
		t.Errorf("shape mismatch accepted")
	}
}

// FuzzReadSafetensors checks that no input makes the reader panic and
// that what it accepts is consistent.
func FuzzReadSafetensors(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", "tiny", "model.safetensors")); err == nil {
		f.Add(data[:min(len(data), 4096)])
	}
	f.Add(rawSafetensors(`{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}`, []byte{0, 60, 0, 192}))
	f.Add(rawSafetensors(`{"a":{"dtype":"BF16","shape":[1,1],"data_offsets":[0,2]}}`, []byte{128, 63}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, err := ReadSafetensors(data)
		if err != nil {
			return
		}
		for name, tn := range ts {
			n := 1
			for _, d := range tn.Shape {
				n *= d
			}
			if n != len(tn.Data) {
				t.Fatalf("%s: shape %v but %d values", name, tn.Shape, len(tn.Data))
			}
		}
	})
}

func TestParseConfigAndPooling(t *testing.T) {
	good := `{"vocab_size":10,"hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":16,"max_position_embeddings":16}`
	c, err := ParseConfig([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if c.LayerNormEps != 1e-12 || c.HiddenAct != "gelu" || c.TypeVocabSize != 2 {
		t.Errorf("defaults not applied: %+v", c)
	}
	for _, bad := range []string{
		`{`, `{"vocab_size":10}`,
		`{"vocab_size":10,"hidden_size":9,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":16,"max_position_embeddings":16}`,
		`{"vocab_size":10,"hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":16,"max_position_embeddings":16,"hidden_act":"relu"}`,
	} {
		if _, err := ParseConfig([]byte(bad)); err == nil {
			t.Errorf("ParseConfig(%s): no error", bad)
		}
	}
	for in, want := range map[string]Pooling{
		`{"pooling_mode_mean_tokens":true}`: PoolMean,
		`{"pooling_mode_cls_token":true}`:   PoolCLS,
		`{"pooling_mode_max_tokens":true}`:  "",
		`{}`:                                "",
	} {
		got, err := ParsePooling([]byte(in))
		if got != want || (want == "") != (err != nil) {
			t.Errorf("ParsePooling(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
}
