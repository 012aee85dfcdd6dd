package workflows

import (
	"os/exec"
	"strings"
	"testing"
)

// TestWorkflowsLinkNoActivityDependencies keeps workflow code on the pure
// side of the contract: it links the contract package, never the activities
// nor the S3 and OpenAI SDKs they use.
func TestWorkflowsLinkNoActivityDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/aws/aws-sdk-go-v2",
		"github.com/openai/openai-go",
		"github.com/conclave-ai/conclave/activities",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("workflows depends on %s: import the types from package contract instead", dep)
			}
		}
	}
}
