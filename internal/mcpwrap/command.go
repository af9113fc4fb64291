package mcpwrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxMessageBytes bounds one message from the upstream. The SDK's command
// transport fixes it at 16 MiB, which is smaller than the results offloading
// exists for, so the stdio upstream runs through commandTransport instead.
const MaxMessageBytes = 256 << 20

// commandTransport runs a stdio MCP server as a child process, like the
// SDK's CommandTransport but with MaxMessageBytes as its line limit.
type commandTransport struct {
	cmd *exec.Cmd
	// terminate is how long the child has to exit after its stdin closes,
	// and again after SIGTERM, before it is killed.
	terminate time.Duration
}

func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
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
	pipes := &mcp.IOTransport{
		Reader:        io.NopCloser(stdout), // the child is stopped by closing stdin
		Writer:        &childStdin{WriteCloser: stdin, cmd: t.cmd, terminate: t.terminate},
		MaxLineLength: MaxMessageBytes,
	}
	return pipes.Connect(ctx)
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
