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
	envAllowPrivate    = "CONCLAVE_ALLOW_PRIVATE_MODEL_HOSTS"
)

// egressFlags are the worker's rule for model keys and hosts, shared by
// every command that runs agents in this process (worker, dev, demo).
// shared marks a worker that serves sessions of others: it calls no
// loopback or private address unless allowed, where dev and demo, on a
// developer's machine, call loopback.
type egressFlags struct {
	keyEnvs, hosts  []string
	private, shared bool
}

func (f *egressFlags) add(cmd *cobra.Command, getenv func(string) string) {
	cmd.Flags().StringSliceVar(&f.keyEnvs, "allow-key-env", splitList(getenv(envAllowKeyEnv)),
		"also let agents' configs read a model key from this variable, besides the providers' own (repeatable; env "+envAllowKeyEnv+"); infrastructure variables (AWS_*, TEMPORAL_*, CONCLAVE_*, …) are refused")
	cmd.Flags().StringSliceVar(&f.hosts, "allow-model-host", splitList(getenv(envAllowModelHosts)),
		"call models only on these hosts: host, host:port or *.domain (repeatable; env "+envAllowModelHosts+"); default any public host")
	loopback := "refused"
	if !f.shared {
		loopback = "allowed"
	}
	cmd.Flags().BoolVar(&f.private, "allow-private-model-hosts", truthy(getenv(envAllowPrivate)),
		"call models on loopback and private addresses (10.0.0.0/8, 192.168.0.0/16, fc00::/7, …) even when not listed in --allow-model-host (env "+envAllowPrivate+"=1); without it loopback is "+loopback+" and private ranges refused. Link-local and cloud metadata addresses are never called")
}

func (f *egressFlags) privateHosts() config.PrivateHosts {
	switch {
	case f.private:
		return config.AllPrivateHosts
	case f.shared:
		return config.NoPrivateHosts
	}
	return config.LoopbackHosts
}

func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

func (f *egressFlags) egress() (config.Egress, error) {
	e, err := config.NewEgress(f.keyEnvs, f.hosts)
	if err != nil {
		return config.Egress{}, fmt.Errorf("--allow-key-env/--allow-model-host: %w", err)
	}
	return e.WithPrivateHosts(f.privateHosts()), nil
}

// egressFromEnv is the rule of a command without the flags (step mode, on
// a developer's machine: loopback allowed).
func egressFromEnv(getenv func(string) string) (config.Egress, error) {
	f := egressFlags{keyEnvs: splitList(getenv(envAllowKeyEnv)), hosts: splitList(getenv(envAllowModelHosts)), private: truthy(getenv(envAllowPrivate))}
	e, err := config.NewEgress(f.keyEnvs, f.hosts)
	if err != nil {
		return config.Egress{}, fmt.Errorf("%s/%s: %w", envAllowKeyEnv, envAllowModelHosts, err)
	}
	return e.WithPrivateHosts(f.privateHosts()), nil
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
