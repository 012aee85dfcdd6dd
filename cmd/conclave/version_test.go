package main

import (
	"strings"
	"testing"

	"github.com/conclave-ai/conclave/worker"
)

// The build id names the build in Temporal commands (set-current-version
// --build-id …) and version strings ("conclave:<id>"): the release version
// when there is one, else a single plain word.
func TestBuildID(t *testing.T) {
	old := buildVersion
	t.Cleanup(func() { buildVersion = old })

	buildVersion = "v1.2.3"
	if got := buildID(); got != "v1.2.3" {
		t.Fatalf("buildID() = %q with a release version", got)
	}
	buildVersion = ""
	id := buildID()
	if strings.ContainsAny(id, " ()") {
		t.Fatalf("buildID() = %q: not a plain word", id)
	}
	if err := (worker.Deployment{Name: worker.DefaultDeployment, BuildID: id}).Validate(); err != nil {
		t.Fatal(err)
	}
}
