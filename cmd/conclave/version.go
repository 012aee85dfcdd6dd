package main

import (
	"runtime/debug"
	"strings"
)

// buildVersion is set by release builds:
// go build -ldflags "-X main.buildVersion=v1.2.3" ./cmd/conclave
var buildVersion string

// version is the release version when the build set one, else the module
// version and VCS revision the Go toolchain recorded.
func version() string {
	v := buildVersion
	info, ok := debug.ReadBuildInfo()
	if !ok {
		if v == "" {
			v = "unknown"
		}
		return v
	}
	if v == "" {
		v = info.Main.Version
	}
	if v == "" {
		v = "(devel)"
	}
	var extra []string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			if len(s.Value) > 12 {
				s.Value = s.Value[:12]
			}
			extra = append(extra, "commit "+s.Value)
		case "vcs.modified":
			if s.Value == "true" {
				extra = append(extra, "modified")
			}
		}
	}
	extra = append(extra, info.GoVersion)
	return v + " (" + strings.Join(extra, ", ") + ")"
}

// anonymousBuild is the build id of a binary that carries neither a
// version nor a commit (go build outside a checkout, a Docker build without
// VERSION): every such binary would share it.
const anonymousBuild = "devel"

// buildID names this build in its worker deployment: the release version
// when the build set one, else the VCS revision. Sessions are pinned to it,
// so two binaries with different workflow code should not share one; builds
// of one modified checkout do (marked "-modified"): give them --build-id.
func buildID() string {
	if buildVersion != "" {
		return buildVersion
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return anonymousBuild
	}
	id, modified := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			id = s.Value
			if len(id) > 12 {
				id = id[:12]
			}
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if id == "" {
		id = strings.Trim(info.Main.Version, "()")
	}
	if id == "" || id == "devel" {
		id = anonymousBuild
	}
	if modified {
		id += "-modified"
	}
	return id
}
