package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// secretKeyNames are setting names that hold a credential, normalised by
// normalKey. A key of that name anywhere a setting can be (a backend, its
// extra_body, a mapping under them) is refused: the config is stored in
// workflow history and session files.
var secretKeyNames = []string{
	"api_key", "apikey", "x_api_key", "access_token", "token", "password",
	"secret", "secret_key", "authorization",
}

// secretQueryNames are base_url query parameters that carry a key.
var secretQueryNames = append([]string{"key"}, secretKeyNames...)

// startReservedBodyKeys are request fields Conclave sets, or that would make
// the model call functions Conclave does not handle, matched after
// normalKey. reservedBodyKeys keeps the exact names Validate refuses.
var startReservedBodyKeys = append(slices.Clone(reservedBodyKeys),
	"functions", "function_call", "parallel_tool_calls")

// backendBodyKeys are extra_body keys that a backend field sets; the request
// builder would let extra_body win silently.
var backendBodyKeys = map[string]string{
	"temperature":           "temperature",
	"max_tokens":            "max_tokens",
	"max_completion_tokens": "max_tokens",
	"top_p":                 "top_p",
	"reasoning":             "reasoning.effort",
	"reasoning_effort":      "reasoning.effort",
	"text":                  "text.verbosity",
	"verbosity":             "text.verbosity",
}

// normalKey is a key as the secret and reserved-name rules compare it:
// trimmed, lower case, '-' as '_'.
func normalKey(k string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(k)), "-", "_")
}

// SecretKeyName reports whether a setting named k holds a credential
// (api_key, API-Key, token, password, Authorization, …).
func SecretKeyName(k string) bool {
	return slices.Contains(secretKeyNames, normalKey(k))
}

// ValidateStart reports the problems a config read from a file or starting
// a new session must not have, beyond Validate's: more agents or JSON than a
// session may start with, extra_body keys that Conclave sets or that
// duplicate a backend field (matched case-insensitively), and a base_url
// carrying a key in its query. Validate does not check these because a
// recorded run replays Validate and was not held to them.
func (c *Config) ValidateStart() error {
	var v validator
	if n := len(c.Agents); n > MaxAgents {
		v.add("agents", fmt.Sprintf("%d agents, at most %d are allowed in one session", n, MaxAgents))
	}
	for i := range c.Agents {
		bp := indexPath("agents", i) + ".backend"
		b := &c.Agents[i].Backend
		if u, err := url.Parse(b.BaseURL); b.BaseURL != "" && err == nil {
			for q := range u.Query() {
				if slices.Contains(secretQueryNames, normalKey(q)) {
					// The value is not echoed: it holds a credential.
					v.add(bp+".base_url", fmt.Sprintf("must not carry a key in its query (%s=…); credentials belong in the environment variable named by api_key_env", q))
				}
			}
		}
		for _, k := range b.ExtraBody.Keys() {
			p := keyPath(bp+".extra_body", k)
			n := normalKey(k)
			switch {
			case slices.Contains(reservedBodyKeys, k):
				// Validate reports it.
			case slices.Contains(startReservedBodyKeys, n):
				v.add(p, fmt.Sprintf("%s is a request field Conclave sets or does not support; remove it from extra_body", n))
			case backendBodyKeys[n] != "":
				v.add(p, fmt.Sprintf("set backend.%s instead; in extra_body it would silently override the backend's setting", backendBodyKeys[n]))
			}
		}
	}
	if data, err := json.Marshal(c); err == nil && len(data) > MaxConfigJSONBytes {
		v.add("config", fmt.Sprintf("%d bytes as JSON, at most %d are allowed in a session's input; shorten the system messages", len(data), MaxConfigJSONBytes))
	}
	return errors.Join(v.errs...)
}
