package redact

import (
	"strings"
	"testing"
)

func TestQuoteAndTerminal(t *testing.T) {
	for in, want := range map[string]string{
		"a\x1b[2Jb":     `"a\x1b[2Jb"`,
		"x\u202ey":      `"x\u202ey"`,
		"n\u0085\u2028": `"n\u0085\u2028"`,
		"\x00\xff":      `"\x00\xff"`,
		"é ok":          `"é ok"`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
	long := strings.Repeat("é", 100) // 200 bytes: the cut falls inside a character
	if got := Quote(long); !strings.HasSuffix(got, "... (200 bytes)") || strings.Contains(got, `\x`) {
		t.Errorf("Quote(long) = %s", got)
	}
	for in, want := range map[string]string{
		"line 1\n\tline 2":     "line 1\n\tline 2",
		"a\x1b]0;t\x07b":       `a\x1b]0;t\x07b`,
		"r\u202el\u2066\u200b": `r\u202el\u2066\u200b`,
		"c1\u0085 ls\u2028":    `c1\u0085 ls\u2028`,
		"bad\xffutf8\r":        `bad\xffutf8\x0d`,
		"plain é ✓":            "plain é ✓",
	} {
		if got := Terminal(in); got != want {
			t.Errorf("Terminal(%q) = %q, want %q", in, got, want)
		}
	}
}
