package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// DefaultDeployment is the worker deployment `conclave worker` joins.
const DefaultDeployment = "conclave"

// Deployment is the worker deployment version a worker belongs to. Sessions
// are pinned to the build that started them: a session's whole history is
// replayed by the code that recorded it, so workflow code never branches on
// versions, and a new build takes new sessions only once it is made current.
type Deployment struct {
	Name    string
	BuildID string
}

// Validate says what is wrong with a deployment name or build id before a
// worker is started with them.
func (d Deployment) Validate() error {
	if d.Name == "" {
		return errors.New("the worker deployment name is empty: set --deployment-name (or unset CONCLAVE_DEPLOYMENT_NAME for the default " + DefaultDeployment + ")")
	}
	// The server keeps versions as "name:build" and, for older clients,
	// "name.build".
	if strings.ContainsAny(d.Name, ".:") {
		return fmt.Errorf("worker deployment name %q contains '.' or ':', which Temporal reserves: choose another --deployment-name", d.Name)
	}
	if strings.TrimSpace(d.BuildID) == "" {
		return errors.New("the build id is empty: set --build-id (or CONCLAVE_BUILD_ID), e.g. to the release or commit this binary was built from")
	}
	if len(d.BuildID) > 255 {
		return fmt.Errorf("build id %.20q… is %d bytes, more than Temporal's 255: choose a shorter --build-id", d.BuildID, len(d.BuildID))
	}
	return nil
}

func (d Deployment) String() string { return d.Name + ":" + d.BuildID }

// options opts a worker into Worker Versioning with every workflow Pinned:
// a session runs to its end, continue-as-new included, on workers of the
// build that started it.
func (d Deployment) options() sdkworker.DeploymentOptions {
	return sdkworker.DeploymentOptions{
		UseVersioning:             true,
		Version:                   sdkworker.WorkerDeploymentVersion{DeploymentName: d.Name, BuildID: d.BuildID},
		DefaultVersioningBehavior: workflow.VersioningBehaviorPinned,
	}
}

// Routing says which build takes new sessions once MakeCurrent returns.
type Routing struct {
	// Current is the current version's build id; empty while unversioned
	// workers take new sessions.
	Current string
	// Changed: this call made d current.
	Changed bool
}

// MakeCurrent makes d's version the current one of its deployment, so new
// sessions start on it. Unless always is set it does so only when the
// deployment never had a current version: the first worker of a fresh setup
// serves sessions without an operator step, and after that a build becomes
// current only when the operator says so. Call it after the worker started:
// the server knows a version once its workers poll. It retries until ctx
// ends.
func MakeCurrent(ctx context.Context, c client.Client, d Deployment, always bool) (Routing, error) {
	h := c.WorkerDeploymentClient().GetHandle(d.Name)
	var last error
	for {
		r, err := makeCurrentOnce(ctx, h, d, always)
		if err == nil {
			return r, nil
		}
		if !retryable(err) {
			return Routing{}, fmt.Errorf("make %s the current version of worker deployment %s: %w", d.BuildID, d.Name, err)
		}
		last = err
		select {
		case <-ctx.Done():
			return Routing{}, fmt.Errorf("worker deployment %s: build %s did not become current (%w); is the worker polling? Check with `temporal worker deployment describe --name %s`",
				d.Name, d.BuildID, errors.Join(ctx.Err(), last), d.Name)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func makeCurrentOnce(ctx context.Context, h client.WorkerDeploymentHandle, d Deployment, always bool) (Routing, error) {
	desc, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return Routing{}, err
	}
	rc := desc.Info.RoutingConfig
	current := ""
	if rc.CurrentVersion != nil {
		current = rc.CurrentVersion.BuildID
	}
	if current == d.BuildID || (!always && (rc.CurrentVersion != nil || !rc.CurrentVersionChangedTime.IsZero())) {
		return Routing{Current: current}, nil
	}
	// The conflict token makes two first workers agree: the second one's
	// call fails, and its next Describe sees the first one's version.
	_, err = h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{
		BuildID: d.BuildID, ConflictToken: desc.ConflictToken,
	})
	if err != nil {
		return Routing{}, err
	}
	return Routing{Current: d.BuildID, Changed: true}, nil
}

// retryable: the deployment or version is not known yet (its workers have
// not polled), or another call changed it in between.
func retryable(err error) bool {
	var notFound *serviceerror.NotFound
	var precondition *serviceerror.FailedPrecondition
	var unavailable *serviceerror.Unavailable
	return errors.As(err, &notFound) || errors.As(err, &precondition) || errors.As(err, &unavailable)
}
