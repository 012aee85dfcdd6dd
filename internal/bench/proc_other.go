//go:build unix && !linux

package bench

import "syscall"

// procAttr puts a child in its own process group, so it can be stopped
// with its children.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
