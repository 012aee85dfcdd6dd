package mcp

import (
	"os/exec"
	"syscall"
)

// procAttr puts a child in its own process group, so that killGroup reaches
// everything it started, and has the kernel kill it when the worker dies,
// even by SIGKILL.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
