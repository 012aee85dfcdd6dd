package worker

import (
	"strings"
	"testing"

	"go.temporal.io/sdk/workflow"
)

func TestDeploymentValidate(t *testing.T) {
	for _, tc := range []struct {
		d    Deployment
		want string // in the error; empty: valid
	}{
		{Deployment{Name: DefaultDeployment, BuildID: "v1.2.3"}, ""},
		{Deployment{Name: "team-a", BuildID: "c45d045-dirty"}, ""},
		{Deployment{Name: "", BuildID: "v1"}, "--deployment-name"},
		{Deployment{Name: "conclave.prod", BuildID: "v1"}, `"conclave.prod" contains '.' or ':'`},
		{Deployment{Name: "conclave:prod", BuildID: "v1"}, "--deployment-name"},
		{Deployment{Name: DefaultDeployment, BuildID: " "}, "--build-id"},
		{Deployment{Name: DefaultDeployment, BuildID: strings.Repeat("x", 256)}, "more than Temporal's 255"},
	} {
		err := tc.d.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.d, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want one containing %q", tc.d, err, tc.want)
		}
	}
}

// A versioned worker pins every workflow it runs.
func TestDeploymentOptions(t *testing.T) {
	o := Deployment{Name: "conclave", BuildID: "v2"}.options()
	if !o.UseVersioning || o.Version.DeploymentName != "conclave" || o.Version.BuildID != "v2" || o.DefaultVersioningBehavior != workflow.VersioningBehaviorPinned {
		t.Fatalf("options = %+v", o)
	}
}
