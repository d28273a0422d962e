// Package escapetest holds what the tests of terminal escaping share: a
// hostile text to feed in, and the check that what comes out may reach a
// terminal as it is. cmd/heatsible's and internal/lcm's tests use it.
package escapetest

import (
	"unicode"
	"unicode/utf8"
)

// HostileText is what a hostile value carries to forge a terminal: ESC
// sequences (clear the screen, set the title), BEL, a right-to-left
// override, NUL, U+0085 (NEL) and U+2028 (line separator).
const HostileText = "a\x1b[2J\x1b]0;owned\x07b\u202ec\x00d\u0085e\u2028f"

// TerminalUnsafe returns the first character of s that may not reach a
// terminal as it is (newline and tab may), or -1. A byte that is not
// UTF-8 is returned as that byte.
func TerminalUnsafe(s string) rune {
	for i, r := range s {
		if r == '\n' || r == '\t' {
			continue
		}
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return rune(s[i])
			}
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			return r
		}
	}
	return -1
}
