package redact

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxShown is how many bytes of a value Quote shows; a longer value is cut
// (on a character boundary) and its length said.
const MaxShown = 80

// Quote shows a value that came from outside heatsible (a request, a
// topology file, a manifest, Heat) inside a message: in Go's double quotes,
// every byte that could act on a terminal or forge a line escaped (ESC,
// NUL and the other control characters, C1 controls such as U+0085,
// bidirectional overrides, zero-width characters, U+2028 and U+2029, bytes
// that are not UTF-8), and cut after MaxShown bytes with its length said.
// It does not mask: a secret must never be passed to it.
func Quote(v string) string {
	if len(v) > MaxShown {
		cut := MaxShown
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(v[:cut]), len(v))
	}
	return strconv.Quote(v)
}

// Unsafe reports whether r may not reach a terminal or a log line as it
// is: control characters (C0, DEL, C1), format characters (bidirectional
// overrides and isolates, zero-width characters, the byte order mark) and
// the line and paragraph separators U+2028 and U+2029. Newline and tab are
// unsafe too; Terminal keeps them where they separate a message's lines.
func Unsafe(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' || r == utf8.RuneError
}

// Terminal returns s with every character Unsafe says may not be shown
// as it is escaped (\x1b, \u202e, \xff for a byte that is not UTF-8),
// except newline and tab. It is the last filter of what heatsible prints
// for people (stderr, messages in -o json), so a value that reached a
// message unquoted by mistake still cannot drive the terminal.
func Terminal(s string) string {
	clean := true
	for _, r := range s {
		if Unsafe(r) && r != '\n' && r != '\t' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t' || !Unsafe(r):
			b.WriteString(s[i : i+size])
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}
