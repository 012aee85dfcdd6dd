//go:build unix && !linux

package devserver

import (
	"os"
	"syscall"
)

// procAttr puts the server in its own process group, so Stop reaches
// anything it spawns and a terminal's Ctrl-C reaches only us (we stop it
// after our worker). Outside Linux there is no parent-death signal: a
// killed parent leaves the server running.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func terminate(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGTERM) }
func kill(p *os.Process) error      { return syscall.Kill(-p.Pid, syscall.SIGKILL) }
