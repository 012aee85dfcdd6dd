package config

// The YAML node index and the wording of problems: where a key is (its
// line), how a value and an expected type are described, and which known
// key a misspelt one was probably meant to be.

import (
	"reflect"
	"strconv"
	"strings"

	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/runes"
	"gopkg.in/yaml.v3"
)

// keyedNode is one mapping entry or sequence item with its field path; key is
// the item itself for sequence items, so key.Line is always the line to show.
type keyedNode struct {
	path     string
	key, val *yaml.Node
}

// nodeIndex lists every entry of the document in order. Aliases are not
// followed: their targets are indexed where the anchor is defined.
type nodeIndex struct{ keys []keyedNode }

func indexNodes(top *yaml.Node) *nodeIndex {
	idx := &nodeIndex{}
	idx.walk(top, "")
	return idx
}

func (idx *nodeIndex) walk(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := keyPath(path, k.Value)
			idx.keys = append(idx.keys, keyedNode{p, k, v})
			idx.walk(v, p)
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			p := indexPath(path, i)
			idx.keys = append(idx.keys, keyedNode{p, v, v})
			idx.walk(v, p)
		}
	}
}

// top returns the key node of a top-level key, or nil.
func (idx *nodeIndex) top(name string) *yaml.Node {
	for _, k := range idx.keys {
		if k.path == name {
			return k.key
		}
	}
	return nil
}

// line returns the line of path, or of its deepest ancestor present in the
// file when the setting came from a default; 0 when none is.
func (idx *nodeIndex) line(path string) int {
	best, bestLen := 0, -1
	for _, k := range idx.keys {
		if len(k.path) > bestLen && (k.path == path || strings.HasPrefix(path, k.path+".") || strings.HasPrefix(path, k.path+"[")) {
			best, bestLen = k.key.Line, len(k.path)
		}
	}
	return best
}

func parentPath(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	// A quoted key may itself contain '.' or '['; walk back to its opening.
	if strings.HasSuffix(path, `"]`) {
		if j := strings.LastIndex(path, `["`); j >= 0 {
			i = j
		}
	}
	return path[:i]
}

// sameValue matches a node against the value in a yaml.v3 message, which
// truncates long values to seven characters and "...".
func sameValue(n *yaml.Node, shown string) bool {
	if n.Kind != yaml.ScalarNode {
		return shown == ""
	}
	if head, ok := strings.CutSuffix(shown, "..."); ok && len(n.Value) > 10 {
		return strings.HasPrefix(n.Value, head)
	}
	return n.Value == shown
}

func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return strconv.Quote(runes.Clip(n.Value, 40))
}

// structTypes are the decoded types, by the name yaml.v3 prints.
var structTypes = map[string]reflect.Type{
	"config.document":     reflect.TypeFor[document](),
	"config.Agent":        reflect.TypeFor[Agent](),
	"config.Backend":      reflect.TypeFor[Backend](),
	"config.Orchestrator": reflect.TypeFor[Orchestrator](),
	"coord.Price":         reflect.TypeFor[coord.Price](),
}

// describeType names a Go type in the user's terms; isStruct says it is
// one of the decoded struct types.
func describeType(goType string, isStruct bool) string {
	t := strings.TrimPrefix(goType, "*")
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["), isStruct:
		return "a mapping"
	case strings.Contains(t, "int"):
		return "a whole number"
	case strings.Contains(t, "float"):
		return "a number"
	case t == "bool":
		return "true or false"
	}
	return "a string"
}

// knownKeys lists the YAML keys of a decoded struct type, for suggestions.
func knownKeys(typeName string) []string {
	return keysOf(structTypes[strings.TrimPrefix(typeName, "*")])
}

// keysOf lists the YAML keys of a struct type; none for nil.
func keysOf(t reflect.Type) []string {
	if t == nil {
		return nil
	}
	var keys []string
	var collect func(reflect.Type)
	collect = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if strings.Contains(opts, "inline") {
				collect(f.Type)
			} else if name != "" && name != "-" {
				keys = append(keys, name)
			}
		}
	}
	collect(t)
	return keys
}

// suggest returns the known key closest to a misspelled one, if any is close.
func suggest(name string, known []string) string {
	best, bestDist := "", max(2, len(name)/4)+1
	for _, k := range known {
		if d := editDistance(name, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
