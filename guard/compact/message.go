package compact

import "hash/maphash"

// Role is the author of a message.
type Role string

// The four roles of the neutral conversation.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCall is one call a model made: Args is the arguments as the dialect
// carried them (a JSON object or a JSON string), counted and never edited.
type ToolCall struct {
	ID   string
	Name string
	Args string
}

// Message is one message of a neutral conversation, which the guard's
// dialect layer maps to and from Ollama, OpenAI and Anthropic messages.
type Message struct {
	Role Role
	// Text is the message's text (all text parts joined by the dialect
	// layer). Compaction may replace it (collapsed, shrunk, or with a
	// removal notice merged in); everything else is never edited.
	Text string
	// Images is the number of images (or other non-text parts) the message
	// carries; each counts Options.ImageTokens.
	Images int
	// ToolCalls are the calls an assistant message makes.
	ToolCalls []ToolCall
	// ToolCallID is, for a tool result, the ID of the call it answers
	// (empty in dialects that match results by position, like Ollama's).
	ToolCallID string
	// Name is, for a tool result, the tool's name; otherwise a participant
	// name, if the dialect has one.
	Name string
}

// Tool is a tool schema sent with the request: it is counted, never edited.
type Tool struct {
	Name        string
	Description string
	Schema      string
}

// Conversation is a chat request in neutral form.
type Conversation struct {
	Messages []Message
	Tools    []Tool
}

// seed keys every hash of the package; it is set once at start-up and never
// changes, so hashes (count-cache keys, plan keys) are stable for the life
// of the process.
var seed = maphash.MakeSeed()

func hashString(s string) uint64 { return maphash.String(seed, s) }

// mix combines two hashes (a splitmix64 finaliser over both).
func mix(a, b uint64) uint64 {
	x := a ^ (b + 0x9e3779b97f4a7c15 + (a << 6) + (a >> 2))
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
