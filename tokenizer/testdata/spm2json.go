//go:build ignore

// spm2json converts a SentencePiece Unigram model (.model) into a
// tokenizer.json the way the transformers library converts T5's
// (Precompiled normalizer, WhitespaceSplit and Metaspace, Unigram):
//
//	go run spm2json.go t5tiny.model > t5tiny.json
//
// gen_spm.sh uses it to make t5tiny.json, whose golden ids come from
// SentencePiece itself (spm_encode).
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"

	"google.golang.org/protobuf/encoding/protowire"
)

type piece struct {
	text  string
	score float64
	typ   int
}

// fields calls fn for each field of a protobuf message.
func fields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, x uint64)) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			panic("bad tag")
		}
		b = b[n:]
		switch typ {
		case protowire.VarintType:
			x, n := protowire.ConsumeVarint(b)
			fn(num, typ, nil, x)
			b = b[n:]
		case protowire.Fixed32Type:
			x, n := protowire.ConsumeFixed32(b)
			fn(num, typ, nil, uint64(x))
			b = b[n:]
		case protowire.Fixed64Type:
			x, n := protowire.ConsumeFixed64(b)
			fn(num, typ, nil, x)
			b = b[n:]
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			fn(num, typ, v, 0)
			b = b[n:]
		default:
			panic(fmt.Sprint("wire type ", typ))
		}
	}
}

func main() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	var pieces []piece
	var charsmap []byte
	unkID := 0
	fields(data, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) {
		switch num {
		case 1: // SentencePiece
			p := piece{typ: 1}
			fields(v, func(num protowire.Number, _ protowire.Type, v []byte, x uint64) {
				switch num {
				case 1:
					p.text = string(v)
				case 2:
					p.score = float64(math.Float32frombits(uint32(x)))
				case 3:
					p.typ = int(x)
				}
			})
			pieces = append(pieces, p)
		case 2: // TrainerSpec
			fields(v, func(num protowire.Number, _ protowire.Type, _ []byte, x uint64) {
				if num == 40 {
					unkID = int(x)
				}
			})
		case 3: // NormalizerSpec
			fields(v, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) {
				if num == 2 {
					charsmap = v
				}
			})
		}
	})
	vocab := make([][2]any, len(pieces))
	var added []map[string]any
	for i, p := range pieces {
		vocab[i] = [2]any{p.text, p.score}
		if p.typ == 2 || p.typ == 3 { // UNKNOWN, CONTROL
			added = append(added, map[string]any{"id": i, "content": p.text, "single_word": false,
				"lstrip": false, "rstrip": false, "normalized": false, "special": true})
		}
	}
	out := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer": map[string]any{"type": "Precompiled", "precompiled_charsmap": base64.StdEncoding.EncodeToString(charsmap)},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "WhitespaceSplit"},
			map[string]any{"type": "Metaspace", "replacement": "▁", "add_prefix_space": true},
		}},
		"post_processor": nil, "decoder": nil,
		"model": map[string]any{"type": "Unigram", "unk_id": unkID, "vocab": vocab, "byte_fallback": false},
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(out); err != nil {
		panic(err)
	}
}
