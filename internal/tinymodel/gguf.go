package tinymodel

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// GGUF v3, little-endian: "GGUF", version, tensor count, metadata count,
// the metadata (key, type, value), the tensor infos (name, dimensions
// innermost first, type, offset into the data), padding to the alignment,
// then each tensor's data at its offset.
const (
	ggufVersion   = 3
	ggufAlignment = 32
)

// GGUF metadata value types.
const (
	gUint32  = 4
	gInt32   = 5
	gFloat32 = 6
	gBool    = 7
	gString  = 8
	gArray   = 9
)

// ggmlF32 is the tensor type of 32-bit floats.
const ggmlF32 = 0

// metaKV is one metadata entry; val is a string, uint32, int32, float32,
// bool, []string or []int32.
type metaKV struct {
	key string
	val any
}

// tensor is one F32 tensor; dims are innermost first (ggml's ne).
type tensor struct {
	name string
	dims []uint64
	data []float32
}

// ggufWriter accumulates the little-endian encoding and the first error.
type ggufWriter struct {
	w   *bufio.Writer
	n   int64
	err error
	buf [8]byte
}

func (g *ggufWriter) bytes(b []byte) {
	if g.err != nil {
		return
	}
	n, err := g.w.Write(b)
	g.n += int64(n)
	g.err = err
}

func (g *ggufWriter) u32(v uint32) {
	binary.LittleEndian.PutUint32(g.buf[:4], v)
	g.bytes(g.buf[:4])
}

func (g *ggufWriter) u64(v uint64) {
	binary.LittleEndian.PutUint64(g.buf[:8], v)
	g.bytes(g.buf[:8])
}

func (g *ggufWriter) str(s string) {
	g.u64(uint64(len(s)))
	g.bytes([]byte(s))
}

func (g *ggufWriter) pad() {
	for g.n%ggufAlignment != 0 && g.err == nil {
		g.bytes([]byte{0})
	}
}

func (g *ggufWriter) value(v any) error {
	switch v := v.(type) {
	case string:
		g.u32(gString)
		g.str(v)
	case uint32:
		g.u32(gUint32)
		g.u32(v)
	case int32:
		g.u32(gInt32)
		g.u32(uint32(v))
	case float32:
		g.u32(gFloat32)
		g.u32(math.Float32bits(v))
	case bool:
		g.u32(gBool)
		b := byte(0)
		if v {
			b = 1
		}
		g.bytes([]byte{b})
	case []string:
		g.u32(gArray)
		g.u32(gString)
		g.u64(uint64(len(v)))
		for _, s := range v {
			g.str(s)
		}
	case []int32:
		g.u32(gArray)
		g.u32(gInt32)
		g.u64(uint64(len(v)))
		for _, x := range v {
			g.u32(uint32(x))
		}
	default:
		return fmt.Errorf("gguf: no encoding for a %T", v)
	}
	return nil
}

// writeGGUF writes meta and tensors to w as a GGUF v3 file.
func writeGGUF(w io.Writer, meta []metaKV, tensors []tensor) error {
	g := &ggufWriter{w: bufio.NewWriterSize(w, 1<<16)}
	g.bytes([]byte("GGUF"))
	g.u32(ggufVersion)
	g.u64(uint64(len(tensors)))
	g.u64(uint64(len(meta)))
	for _, kv := range meta {
		g.str(kv.key)
		if err := g.value(kv.val); err != nil {
			return fmt.Errorf("%s: %w", kv.key, err)
		}
	}
	var offset uint64
	for _, t := range tensors {
		n := uint64(1)
		for _, d := range t.dims {
			n *= d
		}
		if n != uint64(len(t.data)) {
			return fmt.Errorf("gguf: tensor %s: dims %v hold %d values, data has %d", t.name, t.dims, n, len(t.data))
		}
		g.str(t.name)
		g.u32(uint32(len(t.dims)))
		for _, d := range t.dims {
			g.u64(d)
		}
		g.u32(ggmlF32)
		g.u64(offset)
		offset += alignUp(4 * n)
	}
	g.pad()
	for _, t := range tensors {
		for _, x := range t.data {
			g.u32(math.Float32bits(x))
		}
		g.pad()
	}
	if g.err != nil {
		return fmt.Errorf("gguf: %w", g.err)
	}
	if err := g.w.Flush(); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	return nil
}

func alignUp(n uint64) uint64 {
	return (n + ggufAlignment - 1) / ggufAlignment * ggufAlignment
}
