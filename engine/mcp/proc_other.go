//go:build !linux

package mcp

import (
	"os/exec"
	"syscall"
)

// procAttr puts a child in its own process group; only Linux can also have
// it killed when the worker dies.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
