package serve

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/conclave-ai/conclave/engine/config"
)

// LoadTeam reads one --config: FILE, or NAME=FILE. The model id is NAME,
// else the file's top-level `name:` key, else the file's base name without
// its extension. The config is checked as `conclave run` checks it.
func LoadTeam(spec string) (Team, []config.Warning, error) {
	name, path, ok := strings.Cut(spec, "=")
	if !ok {
		name, path = "", spec
	}
	data, err := readFile(path)
	if err != nil {
		return Team{}, nil, err
	}
	data, named, err := takeName(data, path)
	if err != nil {
		return Team{}, nil, err
	}
	if name == "" {
		name = named
	}
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if !validKeyName(name) {
		return Team{}, nil, fmt.Errorf("%s: model id %q: use 1-64 letters, digits, '.', '_' or '-' (--config NAME=FILE names it)", path, name)
	}
	cfg, warnings, err := config.ParseWithWarnings(data, path)
	if err != nil {
		return Team{}, nil, err
	}
	if err := cfg.ValidateStart(); err != nil {
		return Team{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	return Team{Name: name, Config: *cfg}, warnings, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, config.MaxConfigFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", path, err)
	}
	if len(data) > config.MaxConfigFileBytes {
		return nil, fmt.Errorf("read config %s: larger than %d bytes, the most a config file may hold", path, config.MaxConfigFileBytes)
	}
	return data, nil
}

// takeName removes a top-level `name: ID` line, which only serve reads,
// and returns its value. The line is blanked, not deleted, so the config
// parser's line numbers still point into the operator's file.
func takeName(data []byte, path string) ([]byte, string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return data, "", nil // the config parser says what is wrong
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Value != "name" {
			continue
		}
		if v.Kind != yaml.ScalarNode || v.Line != k.Line || k.Column != 1 {
			return nil, "", fmt.Errorf("%s:%d: name must be one line, `name: MODEL_ID`", path, k.Line)
		}
		lines := bytes.Split(data, []byte("\n"))
		lines[k.Line-1] = nil
		return bytes.Join(lines, []byte("\n")), v.Value, nil
	}
	return data, "", nil
}
