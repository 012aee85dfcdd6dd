// Package tools defines the tools an agent can call during a step: the
// workflow tools that end a turn (new_answer, vote, stop) and the workspace
// tools that read and write files confined to the agent's workspace
// (list_files, read_file, write_file).
//
// It is pure Go with no model SDK: the round engine converts a Spec into its
// model's tool type and turns a Result or a parse error into the tool message.
// Every error meant for the model says what was wrong and what to send instead,
// because the model reads it and retries.
package tools

// Spec describes one tool as offered to a model. Parameters is a JSON schema
// object, kept as plain maps so that any SDK can marshal it unchanged.
type Spec struct {
	Name        string
	Description string
	Parameters  map[string]any
}

// Result is what goes back to the model as the tool message. IsError marks a
// refused or failed call; Content then tells the model how to fix it.
type Result struct {
	Content string
	IsError bool
}

// errorResult builds a tool error with a formatted message.
func errorResult(err error) Result {
	return Result{Content: err.Error(), IsError: true}
}

// objectSchema is the JSON schema of an object with the given string-valued
// properties. additionalProperties is false because the parsers reject
// unknown fields; telling the model up front saves a retry.
func objectSchema(props map[string]any, required ...string) map[string]any {
	if required == nil {
		required = []string{}
	}
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}

// stringProp is the schema of one string property.
func stringProp(description string) map[string]any {
	return map[string]any{"type": "string", "description": description}
}
