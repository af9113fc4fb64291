package tinymodel

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// TokenizerJSON returns the model's tokenizer as a Hugging Face
// tokenizer.json: a BPE model with the GGUF file's vocabulary (same ids)
// and merges (same ranks), GPT-2's ByteLevel pre-tokenizer and decoder,
// and the control tokens as special added tokens. Package tokenizer
// parses it; the bytes are the same on every call.
func TokenizerJSON() []byte {
	v := vocab()
	var b bytes.Buffer
	str := func(s string) {
		out, _ := json.Marshal(s) // a string always marshals
		b.Write(out)
	}
	b.WriteString("{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [")
	for id := v.firstControl; id < len(v.tokens); id++ {
		if id > v.firstControl {
			b.WriteByte(',')
		}
		b.WriteString("\n    {\"id\": ")
		b.WriteString(strconv.Itoa(id))
		b.WriteString(", \"content\": ")
		str(v.tokens[id])
		b.WriteString(", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": true}")
	}
	b.WriteString("\n  ],\n  \"normalizer\": null,\n")
	b.WriteString("  \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": true},\n")
	b.WriteString("  \"post_processor\": null,\n")
	b.WriteString("  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": true, \"use_regex\": true},\n")
	b.WriteString("  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": null,\n    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n    \"fuse_unk\": false,\n    \"byte_fallback\": false,\n    \"ignore_merges\": false,\n    \"vocab\": {")
	for id, tok := range v.tokens[:v.firstControl] {
		if id > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n      ")
		str(tok)
		b.WriteString(": ")
		b.WriteString(strconv.Itoa(id))
	}
	b.WriteString("\n    },\n    \"merges\": [")
	for i, m := range v.merges {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n      ")
		str(m[0] + " " + m[1])
	}
	b.WriteString("\n    ]\n  }\n}\n")
	return b.Bytes()
}
