//go:build !unix

package realollama

import "os/exec"

// ownGroup does nothing here: the server is stopped on its own.
func ownGroup(*exec.Cmd) {}

// interrupt stops the server (no signals here).
func interrupt(cmd *exec.Cmd) error {
	return cmd.Process.Kill()
}

// killGroup kills the server.
func killGroup(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
}
