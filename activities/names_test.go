package activities

import (
	"reflect"
	"testing"

	"github.com/conclave-ai/conclave/contract"
)

// TestContractNamesAreActivities checks that every activity name the
// workflows call is a method of Activities, as the worker registers them.
func TestContractNamesAreActivities(t *testing.T) {
	typ := reflect.TypeOf(&Activities{})
	for _, name := range []string{
		contract.NameInitSession, contract.NameAgentStep, contract.NamePresent, contract.NameWriteStatus,
		contract.NameWriteInbox, contract.NameSearchAttrsSet, contract.NameInitPipeline, contract.NamePipelineStep,
		contract.NamePipelineReuse, contract.NameWritePipelineResult, contract.NameAdoptSession, contract.NameRoundEvaluator, contract.NameFenceStep,
	} {
		if _, ok := typ.MethodByName(name); !ok {
			t.Errorf("contract names activity %q, but Activities has no such method", name)
		}
	}
}
