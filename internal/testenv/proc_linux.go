package testenv

import (
	"os/exec"
	"syscall"
)

// setProcAttr asks the kernel to kill the server if the test binary dies
// (go test -timeout, Ctrl-C), when t.Cleanup never runs.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
