//go:build !unix

package devserver

import (
	"os"
	"syscall"
)

// procAttr: without process groups or signals, Stop can only kill the
// CLI itself, which does not spawn helpers.
func procAttr() *syscall.SysProcAttr { return nil }

func terminate(p *os.Process) error { return p.Kill() }
func kill(p *os.Process) error      { return p.Kill() }
