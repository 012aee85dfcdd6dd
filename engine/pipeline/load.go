package pipeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/tools"
)

// Definition is a loaded pipeline: the graph plus what each step runs with.
type Definition struct {
	Title string `json:"title,omitempty"`
	Graph Graph  `json:"graph"`
	// Context is the project context (a PRD…) every step gets a summary of.
	Context string `json:"context,omitempty"`
	// Backend is the default model of steps that name none.
	Backend *config.Backend `json:"backend,omitempty"`
}

// pipelineFile is the YAML form of --pipeline FILE.
type pipelineFile struct {
	Title    string          `yaml:"title"`
	Start    string          `yaml:"start"`
	Context  string          `yaml:"context"` // a file, relative to the pipeline file
	MaxSteps int             `yaml:"max_steps"`
	Backend  *config.Backend `yaml:"backend"`
	Steps    []fileStep      `yaml:"steps"`
}

// fileStep is one step of a pipeline file. It is a named type so that
// messages about its keys can name them.
type fileStep struct {
	Name          string          `yaml:"name"`
	Title         string          `yaml:"title"`
	Prompt        string          `yaml:"prompt"`
	PromptFile    string          `yaml:"prompt_file"`
	Backend       *config.Backend `yaml:"backend"`
	Tools         []string        `yaml:"tools"`
	MaxIterations int             `yaml:"max_iterations"`
	Next          string          `yaml:"next"`
	Destinations  []string        `yaml:"destinations"`
	OnFailure     string          `yaml:"on_failure"`
	Kind          string          `yaml:"kind"`
	Config        string          `yaml:"config"` // team config of a coordination step
}

// KnownTools are the tools a step may list.
var KnownTools = []string{tools.ListFiles, tools.ReadFile, tools.WriteFile}

// LoadPipeline reads a pipeline YAML file and checks it before anything
// runs: keys and values as strictly as a config's (engine/config), with
// their lines, and every backend as a config's backends are checked.
func LoadPipeline(path string) (*Definition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read pipeline: %w", err)
	}
	var f pipelineFile
	file, err := config.DecodeYAML(data, path, &f)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	d := &Definition{Title: f.Title, Backend: f.Backend, Graph: Graph{Start: f.Start, MaxSteps: f.MaxSteps}}
	if f.Context != "" {
		text, err := readInside(dir, f.Context)
		if err != nil {
			file.Add("context", fmt.Errorf("context: %w", err))
		}
		d.Context = text
	}
	if f.Backend != nil {
		file.Add("backend", config.ValidateBackend("backend", *f.Backend))
	}
	for i, s := range f.Steps {
		p := fmt.Sprintf("steps[%d]", i)
		bad := func(format string, args ...any) {
			file.Add(p, fmt.Errorf("%s %q: %s", p, s.Name, fmt.Sprintf(format, args...)))
		}
		step := Step{Name: s.Name, Title: s.Title, Prompt: s.Prompt, Backend: s.Backend, Tools: s.Tools,
			MaxIterations: s.MaxIterations, Next: s.Next, Destinations: s.Destinations, OnFailure: s.OnFailure, Kind: s.Kind}
		switch {
		case s.Prompt != "" && s.PromptFile != "":
			bad("give prompt or prompt_file, not both")
		case s.PromptFile != "":
			text, err := readInside(dir, s.PromptFile)
			if err != nil {
				bad("prompt_file: %v", err)
			}
			step.Prompt = text
		case strings.TrimSpace(s.Prompt) == "":
			bad("no prompt or prompt_file")
		}
		for _, tool := range s.Tools {
			if !contains(KnownTools, tool) {
				bad("unknown tool %q; known tools: %s", tool, strings.Join(KnownTools, ", "))
			}
		}
		if s.Backend != nil {
			file.Add(p+".backend", config.ValidateBackend(p+".backend", *s.Backend))
		}
		if s.Config != "" {
			team, err := loadTeam(dir, s.Config)
			if err != nil {
				bad("config: %v", err)
			}
			step.Team = team
		}
		// A coordination step's agents bring their own models.
		if step.Kind != KindCoordination && step.Backend == nil && d.Backend == nil {
			bad("no backend, and the pipeline has no default backend")
		}
		d.Graph.Steps = append(d.Graph.Steps, step)
	}
	if err := d.Graph.Validate(); err != nil {
		file.Add("", err)
	}
	if err := file.Err(); err != nil {
		return nil, err
	}
	return d, nil
}

// loadTeam reads a coordination step's Conclave config, relative to dir.
func loadTeam(dir, name string) (*config.Config, error) {
	text, err := readInside(dir, name)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Parse([]byte(text), name)
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// scenarioMeta is meta.yaml of a scenario directory (seed 004's shape).
type scenarioMeta struct {
	Title string `yaml:"title"`
	Steps []struct {
		ID    string `yaml:"id"`
		Title string `yaml:"title"`
		File  string `yaml:"file"`
	} `yaml:"steps"`
}

var stepID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// LoadScenario reads a scenario directory as a linear pipeline: the steps
// of meta.yaml in order, each step's Markdown from steps/<file>, and
// prd.md (when present) as the project context. A step that fails stops
// the run, as seed 004 says.
func LoadScenario(dir string, backend *config.Backend) (*Definition, error) {
	meta, err := readInside(dir, "meta.yaml")
	if err != nil {
		return nil, fmt.Errorf("scenario %s: meta.yaml: %w", dir, err)
	}
	var m scenarioMeta
	dec := yaml.NewDecoder(strings.NewReader(meta))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "meta.yaml"), err)
	}
	if len(m.Steps) == 0 {
		return nil, fmt.Errorf("%s: no steps", filepath.Join(dir, "meta.yaml"))
	}
	d := &Definition{Title: m.Title, Backend: backend}
	var errs []error
	for i, s := range m.Steps {
		if !stepID.MatchString(s.ID) {
			errs = append(errs, fmt.Errorf("steps[%d]: id %q must be 1-64 of a-z, 0-9, '_' and '-'", i, s.ID))
		}
		prompt, err := readStepFile(dir, s.File)
		if err != nil {
			errs = append(errs, fmt.Errorf("steps[%d] %q: %w", i, s.ID, err))
		}
		step := Step{Name: s.ID, Title: s.Title, Prompt: prompt, Tools: KnownTools}
		if i+1 < len(m.Steps) {
			step.Next = m.Steps[i+1].ID
		}
		d.Graph.Steps = append(d.Graph.Steps, step)
	}
	d.Graph.Start = m.Steps[0].ID
	if prd, err := readInside(dir, "prd.md"); err == nil {
		d.Context = prd
	} else if !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("prd.md: %w", err))
	}
	if err := d.Graph.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("scenario %s: %w", dir, errors.Join(errs...))
	}
	return d, nil
}

// readStepFile reads a scenario step's file, named relative to steps/:
// it may not leave steps/, and is read through the scenario's own root so
// that steps/ itself cannot be a link to elsewhere.
func readStepFile(dir, name string) (string, error) {
	steps := filepath.Join(dir, "steps")
	if name == "" || filepath.IsAbs(name) || strings.Contains(name, `\`) {
		return "", fmt.Errorf("file %q must be a relative path inside %s", name, steps)
	}
	clean := filepath.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("file %q leaves %s", name, steps)
	}
	return readInside(dir, filepath.Join("steps", clean))
}

// readInside reads a file named relative to dir, refusing names that leave
// it — also through a symbolic link, anywhere on the path: the file is
// opened through an os.Root on dir, which resolves links and refuses any
// that lead out. What such a file holds would otherwise be stored in the
// workflow's input and history and sent to the models.
func readInside(dir, name string) (string, error) {
	if name == "" || filepath.IsAbs(name) || strings.Contains(name, `\`) {
		return "", fmt.Errorf("file %q must be a relative path inside %s", name, dir)
	}
	clean := filepath.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("file %q leaves %s", name, dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	data, err := root.ReadFile(clean)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		return "", fmt.Errorf("file %q cannot be read inside %s (%w): files must stay inside it, symbolic links included", name, dir, err)
	}
	return string(data), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
