package contract

import (
	"strings"
	"testing"
)

func TestValidSessionID(t *testing.T) {
	for _, id := range []string{"s1", "run.003-review", "A_b-c.d", strings.Repeat("x", MaxSessionIDBytes)} {
		if !ValidSessionID(id) {
			t.Errorf("ValidSessionID(%q) = false, want true", id)
		}
	}
	for _, id := range []string{"", ".", "..", "a/b", "../x", `a\b`, "a b", "é", strings.Repeat("x", MaxSessionIDBytes+1)} {
		if ValidSessionID(id) {
			t.Errorf("ValidSessionID(%q) = true, want false", id)
		}
	}
}

func TestPreviewAndTruncateKeepRunesWhole(t *testing.T) {
	s := strings.Repeat("é", PreviewChars)
	p := Preview(s)
	if !strings.HasSuffix(p, "…") || len(p) > PreviewChars+len("…") || strings.ContainsRune(p, '\uFFFD') {
		t.Errorf("Preview cut badly: %q", p)
	}
	if got := Preview("short"); got != "short" {
		t.Errorf("Preview(short) = %q", got)
	}
}

func TestNonRetryableIsACopy(t *testing.T) {
	a := NonRetryable()
	a[0] = "changed"
	if NonRetryable()[0] != ErrTypeEnforcement {
		t.Error("NonRetryable returned shared state")
	}
}
