package devserver

import (
	"os"
	"syscall"
)

// procAttr puts the server in its own process group, so Stop reaches
// anything it spawns and a terminal's Ctrl-C reaches only us (we stop it
// after our worker), and asks the kernel to kill it if we die first
// (go test -timeout, kill -9), when no cleanup runs.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func terminate(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGTERM) }
func kill(p *os.Process) error      { return syscall.Kill(-p.Pid, syscall.SIGKILL) }
