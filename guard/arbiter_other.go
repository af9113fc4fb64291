//go:build !unix

package guard

import "os/exec"

func setProcessGroup(*exec.Cmd) {}

// signalGroup ends the process (no process groups or SIGTERM here).
func signalGroup(cmd *exec.Cmd, _ bool) error { return cmd.Process.Kill() }
