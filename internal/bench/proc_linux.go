//go:build linux

package bench

import "syscall"

// procAttr puts a child in its own process group (so it can be stopped with
// its children) and kills it if this process dies first: an interrupted
// benchmark leaves no servers behind.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
