//go:build unix

package session

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with this id exists on this
// machine (signal 0 checks without signalling).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
