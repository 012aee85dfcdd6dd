package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseCriteria(t *testing.T) {
	good := map[string][]string{
		`["clear", " correct "]`:                        {"clear", "correct"},
		`[{"text": "clear"}, {"description": "cited"}]`: {"clear", "cited"},
		`{"criteria": ["a", {"criterion": "b"}]}`:       {"a", "b"},
		`[]`: {},
		`[{"name": "short", "text": "the page is under 1 MB"}]`: {"the page is under 1 MB"},
	}
	for in, want := range good {
		got, err := ParseCriteria([]byte(in), "c.json")
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	bad := map[string]string{
		`{`:               "not valid JSON",
		`"one"`:           "expected a list",
		`{"items": []}`:   `"criteria" list`,
		`["ok", ""]`:      "criterion 2 is empty",
		`[{"weight": 3}]`: "criterion 1",
		`[1]`:             "criterion 1",
		"[" + strings.Repeat(`"x",`, MaxCriteria) + `"x"]`: "at most",
	}
	for in, want := range bad {
		_, err := ParseCriteria([]byte(in), "c.json")
		require.ErrorContains(t, err, want, in)
		require.ErrorContains(t, err, "c.json", in)
	}
}
