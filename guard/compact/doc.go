// Package compact fits a chat into a model's context window honestly: it
// keeps what matters, says what it removed, keeps what it removed
// retrievable, and keeps the prompt's head byte-identical from turn to turn
// so that the backend's prefix cache keeps hitting. It knows no HTTP and no
// wire format: the guard's dialect layer maps Ollama, OpenAI and Anthropic
// requests to a neutral [Conversation] and maps the [Result] back (Result.Source
// indexes the original messages); library users can call it directly.
//
// # Rules
//
// [Compact] applies, in order:
//
//  1. Nothing, if the conversation fits Budget.Limit.
//  2. The previous turn's [Plan] (Options.Previous, or found in [Plans] by
//     the exact prefix it covers), replayed byte for byte if it still fits.
//  3. Lines repeated many times in tool outputs are collapsed to one line
//     with "[repeated N times]". If that fits, nothing is deleted.
//  4. Evictable units go, stale tool output first (units with tool calls or
//     results before plain chat), then biggest first, then oldest first,
//     until the prompt is under Budget.LowWater (hysteresis: the new plan then holds
//     for the next turns). A unit is an assistant message with tool calls
//     together with all their results (found by id, in any order, or by
//     position when there are no ids), so eviction never leaves a call
//     without its result or a result without its call. System messages,
//     the first user message (the task) and the last Options.KeepRecent
//     messages are never deleted, nor is any unit that holds one of them.
//     Evictions then form blocks: a kept gap between two evicted spans
//     that counts no more than a notice goes too; and an eviction that
//     would leave two user turns adjacent takes the user message next to
//     it, or else keeps (and may shrink) the span's last assistant turn,
//     so a conversation that alternated still does.
//  5. When nothing evictable is left, kept messages are shrunk in place,
//     middle-out (head and tail kept, a notice in the middle), biggest
//     first and the task last, so that one giant message in the protected
//     window cannot deadlock compaction. System messages, tool schemas,
//     tool-call arguments and images are never edited.
//  6. If it still does not fit, a [TooLargeError] (errors.Is [ErrTooLarge]),
//     which the guard answers with 413.
//
// Each run of consecutive evicted messages (kept system messages inside it
// stay in place and do not split it) leaves one notice saying how
// many messages and tokens went, which tools' outputs, and the id under
// which Options.Store kept the originals. A notice is never a
// mid-conversation system message (strict templates reject it and Ollama
// hoists it to the front, breaking the cache): it is a user message of its
// own when that keeps user and assistant turns alternating (between two
// assistant turns, or after tool results before an assistant turn), and
// otherwise is merged into the next user message, the previous user
// message, or the next tool result (a user message cannot stand between a
// call and its results). Its text holds no live counter, and the plan
// remembers it, so the same eviction gives the same bytes on every turn.
// With Options.Digest, the notice of a new span also carries a digest of it
// (inside the notice's brackets, said to be a summary and not the original,
// naming the stored original's id); digests count in the budget and are
// dropped, the longest first, when the prompt would not fit with them, so
// they never make a compaction fail; the plan remembers the notice with its
// digest, so replays call Options.Digest no more.
//
// [CompactPrompt] does the raw-prompt case: head and tail kept, the middle
// replaced by a notice.
//
// # Counting
//
// A [Counter] counts texts (the guard supplies exact or calibrated
// counters; [Estimate] is the fallback). Counts are cached by a hash of the
// text in a [Cache] shared across turns, so each turn counts only its new
// messages, and a replayed plan carries its collapsed and shrunk texts, so
// a turn that replays does no text processing on the old history.
//
// # Cost
//
// BenchmarkCompact (400 messages, 159k tokens, into a 64k budget, on a
// 2-core machine with other work running): about 1.5 ms and 2,050
// allocations on a first turn (every text counted and scanned for repeats),
// 0.8 ms to make a new plan with counts cached, 0.55 ms to extend a plan,
// 0.3 ms to replay one.
//
// # Why hand-written
//
// The reference proxy's compaction (and its peers') fails on exactly the
// points above: a mid-conversation system marker with a per-turn number in
// it, orphans "rescued" by rewriting roles after the fact, no plan that
// survives a turn, and a shrink loop that recounts every message per step.
// The rules interact (units decide what is evictable, placement depends on
// neighbours' roles, plans must be replayable), so they are written here
// once, small and deterministic, with the invariants checked by table
// tests and a fuzz target (FuzzCompact), rather than assembled from a
// generic text-compression library.
package compact
