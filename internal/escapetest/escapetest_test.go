package escapetest

import "testing"

func TestTerminalUnsafe(t *testing.T) {
	for _, c := range []struct {
		in   string
		want rune
	}{
		{"", -1},
		{"plain text, äöü 漢字", -1},
		{"line\nnext\tcolumn", -1},
		{`escaped \x1b[2J \u202e`, -1},
		{"\ufffd", -1}, // a replacement character written out is harmless
		{"a\x1b[2J", 0x1b},
		{"bell\x07", 0x07},
		{"nul\x00", 0},
		{"cr\r", '\r'},
		{"del\x7f", 0x7f},
		{"nel\u0085", 0x85},
		{"csi\u009b", 0x9b},
		{"rlo\u202e", 0x202e},
		{"isolate\u2066", 0x2066},
		{"zwsp\u200b", 0x200b},
		{"bom\ufeff", 0xfeff},
		{"ls\u2028", 0x2028},
		{"ps\u2029", 0x2029},
		{"bad byte \xff", 0xff},
		{"first wins \u202e\x1b", 0x202e},
		{HostileText, 0x1b},
	} {
		if got := TerminalUnsafe(c.in); got != c.want {
			t.Errorf("TerminalUnsafe(%q) = %U, want %U", c.in, got, c.want)
		}
	}
}

// TestHostileTextCarriesEachKind: every character HostileText is said to
// carry is in it and is unsafe on its own, so a test feeding it in covers
// each kind.
func TestHostileTextCarriesEachKind(t *testing.T) {
	for _, r := range []rune{0x1b, 0x07, 0x202e, 0, 0x85, 0x2028} {
		found := false
		for _, h := range HostileText {
			found = found || h == r
		}
		if !found {
			t.Errorf("HostileText lacks %U", r)
		}
		if TerminalUnsafe(string(r)) != r {
			t.Errorf("TerminalUnsafe passes %U", r)
		}
	}
}
