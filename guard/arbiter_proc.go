package guard

import (
	"fmt"
	"os/exec"
	"sync"
	"time"
)

// llamaProc is the llama.cpp process the guard started.
type llamaProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // Wait's, once done is closed
	out  *tailBuffer
}

// startProc runs command with sh -c in its own process group; its output
// is kept (the last 8 KiB) for error messages.
func startProc(command string) (*llamaProc, error) {
	cmd := exec.Command("sh", "-c", command)
	setProcessGroup(cmd)
	out := &tailBuffer{limit: 8 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start llama.cpp: %w", err) // not the command: it may carry --api-key
	}
	p := &llamaProc{cmd: cmd, done: make(chan struct{}), out: out}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *llamaProc) pid() int { return p.cmd.Process.Pid }

func (p *llamaProc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// exitErr is how the process ended (nil while it runs or after a clean
// exit).
func (p *llamaProc) exitErr() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

func (p *llamaProc) tail() string { return p.out.String() }

// stop sends SIGTERM to the process group, then SIGKILL after grace, and
// waits for the exit.
func (p *llamaProc) stop(grace time.Duration) error {
	if !p.running() {
		return nil
	}
	if err := signalGroup(p.cmd, false); err != nil && p.running() {
		return fmt.Errorf("stop llama.cpp (pid %d): %w", p.pid(), err)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	}
	if err := signalGroup(p.cmd, true); err != nil && p.running() {
		return fmt.Errorf("kill llama.cpp (pid %d): %w", p.pid(), err)
	}
	t2 := time.NewTimer(5 * time.Second)
	defer t2.Stop()
	select {
	case <-p.done:
		return nil
	case <-t2.C:
		return fmt.Errorf("llama.cpp (pid %d) did not exit after SIGKILL", p.pid())
	}
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.limit; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
