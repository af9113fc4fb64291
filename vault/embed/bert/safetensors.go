package bert

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sort"
)

// Tensor is one tensor of a safetensors file, converted to float32.
type Tensor struct {
	DType string // as stored: F32, F16 or BF16
	Shape []int
	Data  []float32 // row-major
}

// maxHeader bounds the JSON header of a safetensors file (the format's
// own limit is 100 MB).
const maxHeader = 100 << 20

// ReadSafetensors parses a safetensors file held in data: an 8-byte
// little-endian header length, a JSON header mapping names to dtype,
// shape and data_offsets, then the raw little-endian tensors. F32, F16
// and BF16 tensors are converted to float32; other dtypes are an error.
// Every size and offset is checked, so a hostile file gives an error,
// never a panic.
func ReadSafetensors(data []byte) (map[string]Tensor, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("safetensors: %d bytes, too short for a header", len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > maxHeader || n > uint64(len(data)-8) {
		return nil, fmt.Errorf("safetensors: header of %d bytes in a file of %d", n, len(data))
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+n], &header); err != nil {
		return nil, fmt.Errorf("safetensors: header: %w", err)
	}
	body := data[8+n:]
	names := make([]string, 0, len(header))
	for name := range header {
		if name != "__metadata__" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := make(map[string]Tensor, len(names))
	for _, name := range names {
		var info struct {
			DType   string   `json:"dtype"`
			Shape   []int64  `json:"shape"`
			Offsets []uint64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(header[name], &info); err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		var size uint64
		switch info.DType {
		case "F32":
			size = 4
		case "F16", "BF16":
			size = 2
		default:
			return nil, fmt.Errorf("safetensors: tensor %q: dtype %q not supported (want F32, F16 or BF16)", name, info.DType)
		}
		count := uint64(1)
		shape := make([]int, len(info.Shape))
		for i, d := range info.Shape {
			if d < 0 || d > math.MaxInt32 {
				return nil, fmt.Errorf("safetensors: tensor %q: bad dimension %d", name, d)
			}
			shape[i] = int(d)
			if d != 0 && count > (1<<40)/uint64(d) {
				return nil, fmt.Errorf("safetensors: tensor %q: shape %v too large", name, info.Shape)
			}
			count *= uint64(d)
		}
		if len(info.Offsets) != 2 {
			return nil, fmt.Errorf("safetensors: tensor %q: want 2 data_offsets, got %d", name, len(info.Offsets))
		}
		begin, end := info.Offsets[0], info.Offsets[1]
		if begin > end || end > uint64(len(body)) {
			return nil, fmt.Errorf("safetensors: tensor %q: data_offsets [%d, %d] outside %d bytes of data", name, begin, end, len(body))
		}
		if end-begin != count*size {
			return nil, fmt.Errorf("safetensors: tensor %q: %d bytes for shape %v of %s", name, end-begin, info.Shape, info.DType)
		}
		raw := body[begin:end]
		t := Tensor{DType: info.DType, Shape: shape, Data: make([]float32, count)}
		switch info.DType {
		case "F32":
			for i := range t.Data {
				t.Data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
		case "F16":
			for i := range t.Data {
				t.Data[i] = f16ToF32(binary.LittleEndian.Uint16(raw[2*i:]))
			}
		case "BF16":
			for i := range t.Data {
				t.Data[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*i:])) << 16)
			}
		}
		out[name] = t
	}
	return out, nil
}

// f16ToF32 converts an IEEE 754 half-precision number.
func f16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
	case frac == 0: // zero
		return math.Float32frombits(sign)
	}
	// subnormal: frac × 2^-24
	v := float32(frac) * (1.0 / (1 << 24))
	if sign != 0 {
		v = -v
	}
	return v
}

// WriteSafetensors encodes tensors as F32 safetensors, names in sorted
// order: the inverse of ReadSafetensors, for tests and tools.
func WriteSafetensors(tensors map[string]Tensor) ([]byte, error) {
	names := make([]string, 0, len(tensors))
	for name := range tensors {
		names = append(names, name)
	}
	sort.Strings(names)
	header := make(map[string]any, len(names))
	var off uint64
	for _, name := range names {
		t := tensors[name]
		count := 1
		for _, d := range t.Shape {
			count *= d
		}
		if count != len(t.Data) {
			return nil, fmt.Errorf("safetensors: tensor %q: shape %v holds %d values, data %d", name, t.Shape, count, len(t.Data))
		}
		size := uint64(4 * len(t.Data))
		header[name] = map[string]any{"dtype": "F32", "shape": t.Shape, "data_offsets": []uint64{off, off + size}}
		off += size
	}
	h, err := json.Marshal(header)
	if err != nil {
		return nil, fmt.Errorf("safetensors: header: %w", err)
	}
	out := make([]byte, 8, 8+len(h)+int(off))
	binary.LittleEndian.PutUint64(out, uint64(len(h)))
	out = append(out, h...)
	for _, name := range names {
		for _, v := range tensors[name].Data {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
	}
	return out, nil
}
