package mcpwrap

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxMessageBytes bounds one message from the upstream. The SDK's command
// transport fixes it at 16 MiB, smaller than the results offloading exists
// for.
const MaxMessageBytes = 256 << 20

// maxDecodedBytes bounds the messages given to the SDK to decode, as the
// SDK's own transport does.
const maxDecodedBytes = 16 << 20

// interceptMin is the size from which a response line is examined for a
// tools/call result to offload before the SDK decodes it; smaller ones are
// cheap to decode and are offloaded after.
const interceptMin = 64 << 10

// collectAbove is the message size from which the transport collects
// garbage itself, to bound the peak memory of a huge message to about twice
// its size plus what the store keeps, rather than three or four times.
const collectAbove = 8 << 20

// commandTransport runs a stdio MCP server as a child process. It does what
// the SDK's CommandTransport does, with two differences that matter for large
// results: messages may be up to MaxMessageBytes, and a large tools/call
// result is handed to onResult in its wire form, so it can be stored without
// ever being decoded into Go values (which costs ten times its size).
type commandTransport struct {
	cmd *exec.Cmd
	// terminate is how long the child has to exit after its stdin closes,
	// and again after SIGTERM, before it is killed.
	terminate time.Duration
	// logger receives the lines the server wrote that are not messages.
	logger *slog.Logger
	// onResult gets the result of each large tools/call response that
	// carried a progress token of ours; when it is to be offloaded, it
	// returns a function that stores it and returns its replacement.
	onResult resultHook
}

// resultHook is commandTransport.onResult. The function it returns is
// called after the message's bytes are let go.
type resultHook func(token string, result []byte) (replace func() []byte)

func (t *commandTransport) Connect(context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	c := &stdioConn{
		in:     bufio.NewReaderSize(stdout, 64<<10),
		stdin:  &childStdin{WriteCloser: stdin, cmd: t.cmd, terminate: t.terminate},
		msgs:   make(chan readResult),
		done:   make(chan struct{}),
		ic:     &interceptor{onResult: t.onResult},
		logger: t.logger,
	}
	go c.readLoop()
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

// stdioConn is newline-delimited JSON-RPC over a child's stdin and stdout.
type stdioConn struct {
	in     *bufio.Reader
	stdin  *childStdin
	ic     *interceptor
	logger *slog.Logger

	wmu       sync.Mutex
	msgs      chan readResult
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

func (c *stdioConn) SessionID() string { return "" }

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case r := <-c.msgs:
		return r.msg, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, io.EOF
	}
}

func (c *stdioConn) Write(_ context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.ic.noteRequest(req)
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.stdin.Write(append(data, '\n'))
	return err
}

func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		c.closeErr = c.stdin.Close()
	})
	return c.closeErr
}

func (c *stdioConn) readLoop() {
	for {
		line, err := readLine(c.in, MaxMessageBytes)
		if line = bytes.TrimSpace(line); len(line) > 0 {
			for _, r := range c.decode(line) {
				if r.err != nil {
					// A server that prints something else on stdout (a
					// banner, a stray debug line) keeps its connection, as
					// with other clients; the line is only logged.
					c.logger.Warn("ignored a line from the server that is not a JSON-RPC message", "err", r.err)
					continue
				}
				select {
				case c.msgs <- r:
				case <-c.done:
					return
				}
			}
		}
		if err != nil {
			select {
			case c.msgs <- readResult{err: err}:
			case <-c.done:
			}
			return
		}
	}
}

// decode turns one line into messages (a line may hold a batch).
func (c *stdioConn) decode(line []byte) []readResult {
	if line[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(line, &batch); err != nil {
			return []readResult{{err: fmt.Errorf("bad JSON-RPC batch: %w", err)}}
		}
		var out []readResult
		for _, m := range batch {
			out = append(out, c.decode(m)...)
		}
		return out
	}
	line, _ = c.ic.rewrite(line)
	if len(line) > maxDecodedBytes {
		// Only a tools/call result, stored from its bytes above, may be
		// larger: decoding costs several times a message's size.
		return []readResult{{err: fmt.Errorf("a %d-byte message that is not a tool result over %d bytes", len(line), maxDecodedBytes)}}
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.ic.forget(resp.ID.Raw())
	}
	if err != nil {
		err = fmt.Errorf("bad JSON-RPC message %.80q: %w", line, err)
	}
	return []readResult{{msg: msg, err: err}}
}

// readLine reads one newline-terminated line of at most max bytes. A long
// line is gathered in pieces and joined once, so it costs its size twice
// at most, briefly.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var pieces [][]byte
	total := 0
	for {
		frag, err := r.ReadSlice('\n')
		total += len(frag)
		if total > max {
			return nil, fmt.Errorf("a message from the server is over the %d-byte limit", max)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			pieces = append(pieces, bytes.Clone(frag))
			continue
		}
		if len(pieces) == 0 {
			return bytes.Clone(frag), err
		}
		line := make([]byte, 0, total)
		for _, p := range pieces {
			line = append(line, p...)
		}
		line = append(line, frag...)
		if total >= collectAbove {
			// The pieces are garbage now; collect them before the line is
			// decoded, so that its decoding reuses their memory rather
			// than adding to the peak.
			pieces = nil
			runtime.GC()
		}
		return line, err
	}
}

// childStdin ends the child when closed: close its input, wait, then
// SIGTERM, then kill, as the MCP spec's stdio shutdown says.
type childStdin struct {
	io.WriteCloser
	cmd       *exec.Cmd
	terminate time.Duration
}

func (c *childStdin) Close() error {
	_ = c.WriteCloser.Close()
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	wait := func() (error, bool) {
		select {
		case err := <-exited:
			return err, true
		case <-time.After(c.terminate):
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return ignoreExit(err)
	}
	if c.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return ignoreExit(err)
		}
	}
	if err := c.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("kill the server: %w", err)
	}
	err, _ := wait()
	return ignoreExit(err)
}

// ignoreExit drops the exit status of a child that was asked to stop.
func ignoreExit(err error) error {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil
	}
	return err
}
