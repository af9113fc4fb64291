package guard

import "encoding/json"

// answerFacts is what the guard reads of an upstream answer, or of one
// object of its stream, in any of the three dialects: whether it is the
// final object, and the upstream's count of the prompt. It is parsed as
// JSON, never by looking for byte patterns, so that any spacing or key
// order reads the same.
type answerFacts struct {
	final        bool
	promptTokens int
	usage        bool // the object carries a usage count
}

// wireAnswer is the union of the fields the guard reads, by dialect.
type wireAnswer struct {
	// Ollama
	Done            bool `json:"done"`
	PromptEvalCount int  `json:"prompt_eval_count"`
	// OpenAI (usage.prompt_tokens) and Anthropic (usage.input_tokens)
	Choices []struct {
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens int `json:"prompt_tokens"`
		InputTokens  int `json:"input_tokens"`
	} `json:"usage"`
	// Anthropic
	Type       string `json:"type"`
	StopReason string `json:"stop_reason"`
	Message    struct {
		Usage struct {
			InputTokens int `json:"input_tokens"`
		} `json:"usage"`
	} `json:"message"`
}

// readAnswer parses obj as an answer of dialect k. includeUsage says that
// an OpenAI stream was asked for a usage chunk (stream_options
// include_usage): it comes after the finish chunk, with no choices, and is
// then the final object, the one the report rides in. Anything that is not
// a JSON object reads as no facts.
func readAnswer(k rdKind, obj []byte, includeUsage bool) answerFacts {
	var a wireAnswer
	if json.Unmarshal(obj, &a) != nil {
		return answerFacts{}
	}
	var f answerFacts
	switch k {
	case rdOllama:
		f = answerFacts{final: a.Done, promptTokens: a.PromptEvalCount, usage: a.PromptEvalCount > 0}
	case rdOpenAI:
		finished := false
		for _, c := range a.Choices {
			if c.FinishReason != nil && *c.FinishReason != "" {
				finished = true
			}
		}
		if a.Usage != nil {
			f.promptTokens, f.usage = a.Usage.PromptTokens, true
		}
		f.final = finished && (!includeUsage || f.usage) || includeUsage && len(a.Choices) == 0 && f.usage
	case rdAnthropic:
		if a.Usage != nil {
			f.promptTokens = a.Usage.InputTokens
		}
		if f.promptTokens == 0 {
			f.promptTokens = a.Message.Usage.InputTokens
		}
		f.usage = f.promptTokens > 0
		f.final = a.Type == "message_delta" || a.Type == "message" && a.StopReason != ""
	}
	return f
}
