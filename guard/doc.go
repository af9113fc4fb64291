// Package guard is an HTTP proxy in front of Ollama, llama.cpp,
// OpenAI-compatible and Anthropic servers that makes context overflow
// honest: a prompt that does not fit the window the backend has loaded is
// compacted to fit (package compact), what was removed is said in the
// prompt and in the response, and kept retrievable.
//
// # What it serves
//
//   - Ollama: POST /api/chat (NDJSON stream by default, or one JSON body)
//     and /api/generate (a raw prompt keeps its head and tail); POST
//     /api/embed is passed on as it is, but the inputs longer than the
//     embedding model's window, whose end Ollama cuts silently, are named in
//     the X-Ctxkit-Embed-Truncated header and an EmbedReport (strict refuses
//     them once the window is known); every other path (/api/tags, /api/ps,
//     /api/pull, HEAD /, ...) is passed through.
//   - OpenAI: POST /v1/chat/completions (SSE when stream is set) and
//     /v1/completions, sent to llama.cpp, an OpenAI-compatible server or
//     Ollama by model name (Options.Routes first, then /api/tags and
//     /v1/models say which serves which model); GET /v1/models lists
//     every backend's models, each with the window its backend has loaded
//     (context_length when the backend gave none, and a ctxkit object with
//     the window, its source and the budget), asked with the client's
//     credentials; other /v1/* paths
//     (/v1/embeddings, /v1/responses, ...) are passed through to the
//     model's backend.
//   - Anthropic: POST /v1/messages (SSE when stream is set) is compacted:
//     tool_result blocks become neutral tool messages matched to their
//     tool_use by id, so a call and its result go together, and a message
//     whose blocks all survive is sent byte for byte. It goes to the
//     Anthropic backend (window Options.Windows[model], else 200,000), or,
//     when there is none or a route says so, to the model's backend: Ollama
//     and llama.cpp serve the Messages API too (Claude Code on a local
//     model), with their loaded window, and Ollama's silent truncation is
//     detected there as on /api/chat. /v1/messages/count_tokens is passed
//     through, except to Ollama, which lacks it: the guard answers with its
//     own calibrated count.
//   - The guard's own paths (/ctxkit/*, /metrics) never reach a backend:
//     a wrong method is 405 with Allow, an unknown path 404. A request
//     body over 256 MiB is 413 (refused from its Content-Length before a
//     byte of it is read, and the connection closed), and upstream bodies
//     are read with bounds.
//   - GET /ctxkit/evicted/{id} returns an evicted span (JSON messages) from
//     the offload store: only a span this guard stored (type "evicted",
//     producer "ctxkit-guard"); any other workspace of the shared store,
//     a missing id and an expired one get the same 404, so that ids
//     cannot be probed (see Access). GET /ctxkit/health says whether each
//     backend answers (see Faults), with the policy, counters and
//     calibrations; GET /metrics the Prometheus metrics (requests,
//     compactions, refusals, retries, truncations detected, evicted tokens
//     per backend, upstream latency per backend and endpoint, upstream
//     failures, timeouts and cut answers per backend, requests refused
//     as overloaded or for their Host, and the counters of recall, digests
//     and the arbiter when they are on), in a registry of the Guard's own.
//
// Pass-through uses net/http/httputil.ReverseProxy with FlushInterval -1,
// so every chunk is flushed as it arrives; intercepted streams are relayed
// line by line and flushed per line. Upstream requests carry the client's
// request context: a client that disconnects cancels them.
//
// # Faults
//
// An upstream that fails is said out loud, never passed off as an answer:
//
//   - A stream cut short (the connection drops, or the body ends, before
//     the last event of its dialect: Ollama's object with "done": true,
//     OpenAI's data: [DONE], Anthropic's message_stop) ends with the
//     dialect's in-band error carrying the report, whose upstream_cut is
//     set: Ollama's {"error":"...","ctxkit":{...}} line, OpenAI's data:
//     {"error":{"type":"upstream_cut",...},"ctxkit":{...}}, Anthropic's
//     event: error with {"type":"error","error":{"type":"api_error",...}}
//     (the type its SDKs know). The fragment of a line the stream ended in
//     is not relayed; an event over the line bound ends the same way
//     (upstream_too_large). The official clients (Ollama's, openai-go,
//     anthropic-sdk-go) then return an error instead of a short answer.
//     The recall loop's streams are checked too, and a context_recall
//     call cut short starts no round. An answer that is not streamed and
//     ends early, or is said to be JSON and is not whole JSON, is 502
//     {"error":{"type":"upstream_cut"},"ctxkit":{...}}. Each is a WARN
//     in the log and counted in upstream_cuts_total.
//   - Options.UpstreamTimeout (ctxkit guard --upstream-timeout, 10 min;
//     0 on the command line: none) bounds the wait for an upstream's
//     response headers, on every path, the passed-through ones included:
//     an upstream that accepts the connection and never answers gets the
//     client 504 {"error":{"type":"upstream_timeout","timeout_seconds"}}
//     instead of holding it for ever, and the upstream request is
//     cancelled. The headers come after the model is loaded and the
//     prompt evaluated, and for an answer that is not streamed after the
//     whole generation, so the default is long: Ollama lets a load stall
//     5 minutes before it gives up, and the OpenAI and Anthropic SDKs
//     give a request 10. The body that follows is not bounded.
//   - GET /ctxkit/health probes each backend, without credentials and
//     without spending anything, with a 2 s deadline, at most every 2 s
//     (the probe is cached): Ollama GET /api/version (its version is
//     shown), llama.cpp GET /health (503 while it loads a model),
//     OpenAI-compatible servers and Anthropic GET /v1/models (free; 401
//     without a key proves the server reachable: the guard holds no key,
//     clients send their own). Each backend is "up" (an answer under
//     500), "failing" (5xx), "unreachable" (no answer), or "standby" (a
//     llama.cpp the arbiter stopped and starts on demand), with the probe,
//     its status, latency and error. The status is "ok" when every backend
//     serves, "degraded" when some do, and "down", with HTTP 503, when
//     none does.
//   - Options.MaxConcurrent (--max-concurrent, 64; 0 on the command line:
//     no cap) caps the requests in flight: one more gets 503 with
//     Retry-After: 1 and {"error":{"type":"overloaded","max_concurrent"}}
//     at once rather than waiting. The guard's own paths are not counted,
//     so health checks and scrapes still answer under load.
//
// # Access
//
// Ollama refuses, on a loopback address, a request whose Host header does
// not name this machine: a web page whose domain was rebound to 127.0.0.1
// could otherwise drive it from a browser. The guard rewrites Host to the
// backend's, so it makes the same check itself (the facts of Ollama
// v0.17.4's allowedHost): when it listens on a loopback address
// (Options.ListenAddr; "": the address each request came in on), it
// serves a Host that is an IP that is loopback, private, unspecified or
// this machine's, no Host, localhost, the machine's hostname, or a name
// under .localhost, .local or .internal; anything else is 403
// {"error":{"type":"host_not_allowed"}}, a WARN and host_refused_total,
// before anything reaches a backend. Options.AllowedHosts (--allowed-hosts)
// adds names for a reverse proxy in front: a name, .domain for its
// subdomains, * for any. On an address other machines reach (--insecure)
// every Host is served, as Ollama serves it there.
//
// The guard does not authenticate what it proxies (clients' own keys go
// to the backends), but two paths of its own are guarded: GET
// /ctxkit/evicted/{id} (what clients sent) and POST /ctxkit/runtime
// (pinning a runtime). With Options.Token (--token-env NAME: the token in
// $NAME, at least 16 characters) they need Authorization: Bearer with it,
// compared in constant time and never logged (401 otherwise); without one
// they are served on a loopback address only (403 token_required
// elsewhere). The recall tool reads only the guard's own spans as well.
//
// # Window, budget, counting
//
// The window is the one the backend will run this request in. Ollama's is
// resolved per request as Ollama resolves it: options.num_ctx, else the
// Modelfile's PARAMETER num_ctx, else the server's default, capped by the
// model's trained context (/api/show gives the Modelfile's parameters and
// model_info["<arch>.context_length"], asked at most every 10 s per
// model). The server's default (4096 on a small GPU or a CPU, larger with
// more VRAM, or OLLAMA_CONTEXT_LENGTH) is learned from /api/ps after a
// request the guard sent at it; until then it is Options.Windows[model] or
// Options.DefaultWindow, or a smaller window the model is loaded at. The
// last load alone says nothing: a request with another num_ctx reloads the
// model, and /v1 requests (which cannot set num_ctx) run at the default.
// llama.cpp's is its per-slot n_ctx from /props; Options.Windows or
// DefaultWindow for the others. Budget = window − reserved output (num_predict,
// max_tokens, max_completion_tokens, else Options.Reserve) − Options.Margin.
// Messages, tool schemas, tool calls, images (768 tokens each) and a
// template overhead are counted with Estimate, which counts at least what
// Llama 2's, Llama 3's and Qwen 3's tokenizers count on every kind of text
// measured (prose, code, JSON, logs, CJK and other scripts, emoji,
// numbers, base64, URLs, whitespace; on English prose about 1.3 times
// Llama 2's count and 1.4 times the others'; its doc has the table and
// what it does not cover: byte-level vocabularies with few merges), or
// Options.Counter (`ctxkit guard --tokenizer PATH`
// sets it to package tokenizer's exact count from the model's Hugging Face
// tokenizer.json), times a per-backend, per-model
// factor that only ever rises: it is calibrated from Ollama's
// prompt_eval_count, usage.prompt_tokens, Anthropic's input_tokens and the
// numbers in upstream context errors, ignoring prompts under 1,000
// characters. An error without numbers (Ollama's "the prompt is longer
// than the context length", or "the input length exceeds the context
// length" under "truncate": false) says only that the prompt was over the
// window: the calibration rises that far, so that a repeat is compacted
// before it is sent, and the one retry counts four times as much. Counts are
// cached per text (compact.Cache, replaced when the factor rises), and
// eviction plans are remembered across turns (compact.Plans) so the prompt
// head stays byte-identical and the backend's prefix cache keeps hitting;
// a plan that no longer fits (the calibration rose, the window shrank) is
// extended, a message it shrank shrunk again from its original.
// In front of llama.cpp, a chat the estimate puts over half the budget is
// counted exactly before it is sent (/apply-template, then /tokenize; no
// images): over the budget, the calibration rises from the exact count and
// the request is recompacted, so an undercount costs no refused try. The
// report's exact_counts then says tokens_after is llama.cpp's own count.
//
// # Policies
//
// Options.Policy is the default; a request's X-Ctxkit-Policy header
// (PolicyHeader) sets its own, so one agent can ask for strict or observe
// from a shared guard (a bad value is a 400; the header is not sent
// upstream). compact (default) compacts; strict answers 413 with a
// machine-readable body ({"error":{"type":"context_overflow",
// "n_prompt_tokens",...}}) after counting only, before any compaction work;
// observe passes the request through untouched, reports what would have
// been evicted, and detects Ollama's silent truncation after the fact; off
// passes everything through. Under every policy but off a truncation is
// detected from the answer (parsed as JSON), on any of three signs: the
// backend evaluated the whole window (Ollama v0.17 cuts a message too long
// to exactly num_ctx tokens, and its done_reason says nothing); the
// prompt sent counted at least the window and the backend evaluated less;
// or it evaluated fewer tokens than the text sent can hold at 12 bytes a
// token (Ollama drops whole messages from the front), which holds even when
// the estimate is short. A truncation is reported (upstream_truncated, a
// WARN, the metric) and, since the capped count is not the prompt's, it
// does not calibrate as one: the calibration rises only so far that the
// same prompt counts over the window next time.
//
// # Requests and reports
//
// A chat request (Ollama, OpenAI) is read in place: its top-level fields
// and messages are slices of the body as received, and only the messages'
// texts are decoded into memory of their own. Messages compaction leaves
// alone go upstream byte for byte, changed ones keep every other field as
// it was, and the request's other fields are kept as they were, in their
// order. A request that needs no change is sent as received.
//
// The response gets a "ctxkit" field (Report: compacted, tokens before and
// after, window, budget, evicted tokens, strategy, each changed message's
// fate, evicted spans with their store ids, exact counts or not, recovery)
// and the headers X-Ctxkit-Compacted, X-Ctxkit-Evicted-Tokens and
// X-Ctxkit-Budget. Evicted tokens count every token removed: whole
// messages evicted, and what shrinking or collapsing took out of the
// messages kept. In a stream the report rides in the final object:
// Ollama's done chunk, OpenAI's chunk with a finish_reason (or, when
// stream_options.include_usage asked for it, the usage chunk that follows
// it, so that the report carries the upstream's count), Anthropic's
// message_delta; in a stream cut short, in the error that ends it. The
// objects are parsed as JSON, never matched as bytes.
//
// An upstream context error (llama.cpp's 400 exceed_context_size_error,
// or its in-band first SSE event in older builds; OpenAI's
// context_length_exceeded; vLLM's "maximum context length is M tokens ...
// at least N input tokens", in its current and older envelopes; SGLang's
// "Input length (N tokens) exceeds the maximum allowed length (M tokens)",
// also in-band in a 200 stream; Anthropic's "prompt is too long"; Ollama's
// "prompt is longer than the context length" or, on its native path,
// llama-server's body inside its error string) recalibrates the estimate
// from the error's numbers, takes the window it names, recompacts and
// retries once; a second failure is returned as it is, with the report (in
// a stream, in the in-band error event).
//
// Options.NoThink (ctxkit guard --no-think) turns thinking off with the
// switch each backend reads, since the wrong one fails silently (empty
// content, the text in a thinking field): "think": false on Ollama's
// /api/*, "reasoning_effort": "none" on Ollama's /v1/*,
// chat_template_kwargs.enable_thinking = false for llama.cpp and
// OpenAI-compatible servers; a switch the client set is left alone.
//
// # Recall
//
// With Options.Recall (ctxkit guard --recall), a chat request that carries
// tools gets one more, context_recall (id; offset and max_tokens to page),
// in its dialect's schema, and notices say to call it with their id. It is
// added whenever tools are present, not only when something is evicted: the
// tool list sits at the head of the prompt, so adding it on the turn that
// first overflows would change the head and empty the backend's prefix cache
// exactly when the prompt is largest; it is counted in the budget. A request
// without tools gets none (the client has no tool loop to expect calls
// from), nor does any under strict or observe. When the model calls
// context_recall, the guard answers the call itself: it appends the
// assistant's turn (the context_recall calls only) and one tool result per
// call (the evicted messages as text, from the offset, at most a page of
// max(64, budget/4) tokens, ending with the arguments that read on; an
// unknown or expired id, or bad arguments, a result saying so), fits the
// request into the budget again (the client's last question and the recall
// turns after it are never evicted; older recall turns are dropped, oldest
// first, when they pass half the budget), and sends it again, for at most
// Options.RecallRounds rounds (4). The last round's request goes without
// the tool; calls the model still makes are removed from the answer and the
// report says recall_limit_reached. A turn that calls context_recall and
// other tools is a recall round: the other calls are dropped unexecuted
// (the model asks again once it has read), so the client never sees a call
// it cannot answer next to one it must not see. Streams are relayed as they
// arrive until the first tool-call event (Ollama's message.tool_calls,
// OpenAI's delta.tool_calls, Anthropic's tool_use content_block_start); the
// rest of that answer is held to its end, then dropped for a round or sent
// on. The client sees one stream: one set of headers, OpenAI's role chunk
// once and every chunk with the first answer's id, Anthropic's
// message_start once and block indices following on, the report in the
// last answer's final object only, whose usage counts that answer alone.
// The report gains recall_rounds, recalled (the ids asked for) and
// recall_compactions. An Anthropic turn's thinking blocks go back with its
// context_recall calls, as the API requires.
//
// # Digests
//
// With Options.Summarize (ctxkit guard --summarize), the notice of each new
// evicted span carries a digest, said to be a summary and not the original
// and naming the stored original's id. Options.SummarizerModel writes it
// (default: the request's own model, which is installed and loaded
// already; a small one such as gemma3:1b is faster), through Ollama's
// /api/generate or a llama.cpp or OpenAI-compatible /v1/chat/completions,
// as the guard routes that model, or at Options.SummarizerURL. The span is
// rendered as text and summarized whole: map over chunks cut to the
// summarizer's window (found as for requests, num_ctx sent with it, room
// left for the prompt and the output), then reduce of the partial
// summaries, in levels while they do not fit one call, each call told to
// keep names, numbers, ids, paths and decisions, the digest at most
// Options.DigestTokens (400). Any failed call, or the whole passing
// Options.SummarizeTimeout (30 s per request), leaves the plain notice and
// the report's summary_error; a digest that would put the prompt over the
// budget is dropped too, so a digest never makes compaction fail. Digests
// are kept in the offload store under a hash of the span, the model and the
// prompt (digest_<hash>, 24 h), so a span replanned or seen after a restart
// is never summarized twice, and concurrent requests with the same new span
// share one summarization; the plan keeps the notice, so replays stay byte
// identical. Raw prompts and messages shrunk in place get no digest.
// GET /ctxkit/health counts the summarizer's calls, cache hits, digests and
// failures. Under Options.Arbitrate the summarizer model must run on the
// request's runtime (or at Options.SummarizerURL): the request holds the GPU.
//
// # One GPU, two runtimes
//
// With Options.Arbitrate (ctxkit guard --arbitrate), Ollama and llama.cpp
// take turns on one GPU. Every request the guard sends to either (chat,
// generate, completions, embeddings, other POSTs passed through; GETs and
// Ollama's model management do not count) first acquires its runtime and
// holds it until its answer is relayed. Switching to llama.cpp unloads
// every model in Ollama's /api/ps (POST /api/generate with keep_alive 0)
// and waits until /api/ps is empty, then readies llama.cpp: a router-mode
// llama-server (GET /models lists models with a status) loads the model
// asked for through POST /models/load if it is unloaded, else autoloads;
// a stopped llama-server is started with ArbiterOptions.LlamaCppCmd (sh -c,
// its own process group) and waited for until /health answers 200 (60 s).
// Switching to Ollama unloads router mode's loaded models (POST
// /models/unload), or stops the process the guard started (SIGTERM to the
// group, SIGKILL after 10 s); Ollama loads on demand. A llama-server the
// guard did not start and that has no router mode is left running, and
// GET /ctxkit/runtime says so ("llamacpp_mode":"external" and a note)
// rather than pretend it was unloaded. A switch waits for the other
// runtime's requests in flight to finish; after one, the new runtime keeps
// the GPU for ArbiterOptions.MinHold (20 s), during which requests for the
// other wait in a FIFO queue (QueueLimit 64) instead of failing; once the
// hold is over, requests for the active runtime that arrive after them
// wait behind them, so neither starves. A request that waits past
// QueueTimeout (2 min), or finds the queue full, gets 503 with Retry-After
// and {"error":{"type":"runtime_unavailable","active","wanted",
// "retry_after_seconds"}}; a failed switch gets 503 runtime_switch_failed
// (with the end of llama-server's output when it would not start). The
// request that switched carries X-Ctxkit-Runtime-Switch-Ms, one that
// waited X-Ctxkit-Runtime-Wait-Ms. GET /ctxkit/runtime (and the runtime
// key of GET /ctxkit/health) shows the active and pinned runtime,
// llama.cpp's mode and liveness, Ollama's loaded models, the queue, the
// counters and the last switch time. POST /ctxkit/runtime {"pin":"ollama"}
// (or "llamacpp", or null to unpin) pins a runtime: it switches at once,
// min-hold notwithstanding, is written atomically to
// ArbiterOptions.StateFile and read back at start, and requests for the
// other runtime get 409 runtime_pinned (not 503: retrying does not help
// until someone unpins). Guard.Close stops the llama-server the guard
// started. With the emulators on a loaded 2-core machine, a switch to
// llama.cpp takes 12 to 19 ms when it starts the process and 2 to 4 ms
// back; about 1 ms and 0.2 to 2 ms in router mode (BenchmarkRuntimeSwitch,
// the guard's own X-Ctxkit-Runtime-Switch-Ms); real runtimes spend seconds
// loading weights.
//
// # Cost
//
// On a 2-core machine with other work running, against the Ollama emulator
// (BenchmarkPassthrough, BenchmarkTimeToFirstByte; BENCHMARKS.md has the
// figures and commands): a passed-through request adds about 0.05 ms at
// p50; a chat that fits (parsed, counted, sent unchanged, report injected)
// about 0.13 ms, streamed or not, time to first byte included. A
// 400-message agent history (149k tokens by the estimate) compacted into a
// 64k window through the proxy takes about 14 ms at p50 end to end, the
// emulator's own rendering included (BenchmarkCompactThroughProxy).
//
// Memory (bench/guardmem, one chat through a fresh `ctxkit guard`): a chat
// that fits costs the body and its texts, about twice the body above an
// idle guard's 26 MB (a 105 MB chat peaks at 241 MB); one that is
// compacted also encodes the evicted messages for the store, once, and the
// SQLite store holds that span about twice more while it writes it (raw
// and one row per message), about 5 times the body in all (566 MB).
//
// # Why hand-written
//
// The proxy is small glue over net/http: a generic reverse proxy cannot
// rewrite a request from its parsed messages while keeping the rest raw,
// nor inject a report into the last chunk of an NDJSON or SSE stream, and
// the reference proxy's weaknesses (budget against a default window on
// /v1, uncounted tools and images, a global calibration, unbounded retry,
// strict compacting before refusing, no in-band stream report, no way to
// fetch what was evicted) are each a few lines to do right here. Pass-through
// is the standard library's ReverseProxy; compaction is package compact;
// storage is the offload engine.
package guard
