package mcp

import (
	"fmt"
	"os"
	"strings"
)

func fmtSscan(s string, v *int) (int, error) { return fmt.Sscan(s, v) }

// alive reports a process that exists and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(data))
	return len(fields) > 2 && fields[2] != "Z"
}
