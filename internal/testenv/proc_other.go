//go:build !linux

package testenv

import "os/exec"

// setProcAttr has no portable way to tie the child's life to ours outside
// Linux; t.Cleanup still stops it in the normal case.
func setProcAttr(cmd *exec.Cmd) {}
