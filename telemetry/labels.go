package telemetry

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/conclave-ai/conclave/engine/runes"
)

// Defaults of the model label's bounds.
const (
	// DefaultModelLabels is how many distinct model names get a label of
	// their own; later ones are counted under "other".
	DefaultModelLabels = 32
	// maxLabelBytes bounds one model label.
	maxLabelBytes = 64
	// otherLabel counts the models past the cap.
	otherLabel = "other"
	// EnvMaxModelLabels changes DefaultModelLabels.
	EnvMaxModelLabels = "CONCLAVE_METRICS_MAX_MODELS"
)

// modelLabels keeps the model label of every metric to a bounded set: the
// model name comes from whoever starts a session, and each new name would
// add series to /metrics for the life of the worker. Names are cut to 64
// bytes without control characters; the first names seen get a label of
// their own, up to the cap, and the rest share "other".
type modelLabels struct {
	mu   sync.Mutex
	seen map[string]bool
	max  int
}

func newModelLabels(getenv func(string) string) (*modelLabels, error) {
	l := &modelLabels{seen: map[string]bool{}, max: DefaultModelLabels}
	if v := strings.TrimSpace(getenv(EnvMaxModelLabels)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return nil, fmt.Errorf("%s=%q is not a number from 1 to 10000, e.g. %d", EnvMaxModelLabels, v, DefaultModelLabels)
		}
		l.max = n
	}
	return l, nil
}

func (l *modelLabels) label(name string) string {
	name = cleanLabel(name)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.seen[name]:
		return name
	case len(l.seen) < l.max:
		l.seen[name] = true
		return name
	}
	return otherLabel
}

// cleanLabel is name without control characters, as valid UTF-8, cut to
// maxLabelBytes at a rune boundary.
func cleanLabel(name string) string {
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(name, "?"))
	name, _ = runes.Truncate(name, maxLabelBytes)
	if name == "" || name == otherLabel {
		return "unnamed"
	}
	return name
}
