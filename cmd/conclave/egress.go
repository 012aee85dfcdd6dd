package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/conclave-ai/conclave/engine/config"
)

// Variables that extend a worker's egress rule where no flag is given:
// comma-separated key variable names and model hosts.
const (
	envAllowKeyEnv     = "CONCLAVE_ALLOW_KEY_ENV"
	envAllowModelHosts = "CONCLAVE_ALLOW_MODEL_HOSTS"
)

// egressFlags are the worker's rule for model keys and hosts, shared by
// every command that runs agents in this process (worker, dev, demo).
type egressFlags struct{ keyEnvs, hosts []string }

func (f *egressFlags) add(cmd *cobra.Command, getenv func(string) string) {
	cmd.Flags().StringSliceVar(&f.keyEnvs, "allow-key-env", splitList(getenv(envAllowKeyEnv)),
		"also let agents' configs read a model key from this variable, besides the providers' own (repeatable; env "+envAllowKeyEnv+"); infrastructure variables (AWS_*, TEMPORAL_*, CONCLAVE_*, …) are refused")
	cmd.Flags().StringSliceVar(&f.hosts, "allow-model-host", splitList(getenv(envAllowModelHosts)),
		"call models only on these hosts: host, host:port or *.domain (repeatable; env "+envAllowModelHosts+"); default any host")
}

func (f *egressFlags) egress() (config.Egress, error) {
	e, err := config.NewEgress(f.keyEnvs, f.hosts)
	if err != nil {
		return config.Egress{}, fmt.Errorf("--allow-key-env/--allow-model-host: %w", err)
	}
	return e, nil
}

// egressFromEnv is the rule of a command without the flags (step mode).
func egressFromEnv(getenv func(string) string) (config.Egress, error) {
	f := egressFlags{keyEnvs: splitList(getenv(envAllowKeyEnv)), hosts: splitList(getenv(envAllowModelHosts))}
	e, err := config.NewEgress(f.keyEnvs, f.hosts)
	if err != nil {
		return config.Egress{}, fmt.Errorf("%s/%s: %w", envAllowKeyEnv, envAllowModelHosts, err)
	}
	return e, nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
