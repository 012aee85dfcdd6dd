package runes

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
		cut  bool
	}{
		{"héllo", 2, "h", true}, // é is two bytes: never half of it
		{"héllo", 3, "hé", true},
		{"abc", 3, "abc", false},
		{"abc", 0, "", true},
		{"abc", -1, "", true},
		{"", 0, "", false},
	} {
		got, cut := Truncate(tc.s, tc.n)
		if got != tc.want || cut != tc.cut {
			t.Errorf("Truncate(%q, %d) = %q, %v; want %q, %v", tc.s, tc.n, got, cut, tc.want, tc.cut)
		}
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a longer text", 8, "a lon…"},
		{"ééééé", 8, "éé…"}, // 5 bytes left for text: two whole runes
		{"abcdef", 2, "…"},  // no room for text: the mark alone says so
	} {
		if got := Clip(tc.s, tc.n); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func FuzzClip(f *testing.F) {
	f.Add("héllo wörld", 7)
	f.Add(strings.Repeat("日本", 50), 100)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < len(Mark) || n > 1<<20 {
			return
		}
		got := Clip(s, n)
		if len(got) > n {
			t.Fatalf("Clip(%q, %d) is %d bytes", s, n, len(got))
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Clip(%q, %d) = %q is not valid UTF-8", s, n, got)
		}
		if got != s && !strings.HasSuffix(got, Mark) {
			t.Fatalf("Clip(%q, %d) = %q cut without the mark", s, n, got)
		}
	})
}
