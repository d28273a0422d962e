package heat

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// parsePyLiteral parses the repr of a Python value as Heat's older
// OS::Cinder::Volume "attachments" attribute returns it (str() of Cinder's
// list of dicts), and JSON, into Go values: dict -> map[string]any,
// list/tuple -> []any, str -> string, int/float -> float64,
// True/False/true/false -> bool, None/null -> nil.
//
// It is a strict literal parser, not an evaluator: anything else (names,
// calls, datetime(...) objects, trailing text) is an error, nesting is
// bounded, and the input is bounded in size.
func parsePyLiteral(s string) (any, error) {
	if len(s) > 1<<20 {
		return nil, errors.New("python literal: longer than 1 MiB")
	}
	p := &pyParser{s: s}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, p.errf("unexpected %q after the value", p.rest())
	}
	return v, nil
}

type pyParser struct {
	s string
	i int
}

const pyMaxDepth = 32

func (p *pyParser) errf(format string, a ...any) error {
	return fmt.Errorf("python literal at offset %d: %s", p.i, fmt.Sprintf(format, a...))
}

func (p *pyParser) rest() string {
	r := p.s[p.i:]
	if len(r) > 20 {
		r = r[:20] + "..."
	}
	return r
}

func (p *pyParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *pyParser) value(depth int) (any, error) {
	if depth > pyMaxDepth {
		return nil, p.errf("nested deeper than %d", pyMaxDepth)
	}
	p.space()
	if p.i >= len(p.s) {
		return nil, p.errf("unexpected end of input")
	}
	switch c := p.s[p.i]; {
	case c == '[':
		return p.seq(depth, ']')
	case c == '(':
		return p.seq(depth, ')')
	case c == '{':
		return p.dict(depth)
	case c == '\'' || c == '"':
		return p.str()
	case (c == 'u' || c == 'U' || c == 'b' || c == 'B') && p.i+1 < len(p.s) && (p.s[p.i+1] == '\'' || p.s[p.i+1] == '"'):
		p.i++ // Python 2 u'' and b'' prefixes
		return p.str()
	case c == '-' || c == '+' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		for word, v := range map[string]any{"None": nil, "null": nil, "True": true, "true": true, "False": false, "false": false} {
			if strings.HasPrefix(p.s[p.i:], word) && !p.identAt(p.i+len(word)) {
				p.i += len(word)
				return v, nil
			}
		}
		return nil, p.errf("unsupported value %q", p.rest())
	}
}

func (p *pyParser) identAt(i int) bool {
	if i >= len(p.s) {
		return false
	}
	c := p.s[i]
	return c == '_' || c == '(' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func (p *pyParser) seq(depth int, end byte) ([]any, error) {
	p.i++
	out := []any{}
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == end {
			p.i++
			return out, nil
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.space()
		if p.i >= len(p.s) {
			return nil, p.errf("unterminated list")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case end:
		default:
			return nil, p.errf("expected ',' or %q, got %q", end, p.rest())
		}
	}
}

func (p *pyParser) dict(depth int) (map[string]any, error) {
	p.i++
	out := map[string]any{}
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return out, nil
		}
		k, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		key, ok := k.(string)
		if !ok {
			return nil, p.errf("dict key %v is not a string", k)
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, p.errf("expected ':' after key %q", key)
		}
		p.i++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out[key] = v
		p.space()
		if p.i >= len(p.s) {
			return nil, p.errf("unterminated dict")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
		default:
			return nil, p.errf("expected ',' or '}', got %q", p.rest())
		}
	}
}

func (p *pyParser) str() (string, error) {
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return b.String(), nil
		case c == '\n':
			return "", p.errf("newline in string")
		case c != '\\':
			b.WriteByte(c)
			p.i++
			continue
		}
		// escape
		p.i++
		if p.i >= len(p.s) {
			break
		}
		e := p.s[p.i]
		p.i++
		switch e {
		case '\\', '\'', '"', '/':
			b.WriteByte(e)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '0':
			b.WriteByte(0)
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if p.i+n > len(p.s) {
				return "", p.errf("short \\%c escape", e)
			}
			r, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
			if err != nil || !utf8.ValidRune(rune(r)) {
				return "", p.errf("bad \\%c escape %q", e, p.s[p.i:p.i+n])
			}
			p.i += n
			b.WriteRune(rune(r))
		default:
			// Python keeps unknown escapes verbatim.
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return "", p.errf("unterminated string")
}

func (p *pyParser) number() (float64, error) {
	start := p.i
	if p.s[p.i] == '-' || p.s[p.i] == '+' {
		p.i++
	}
	for p.i < len(p.s) && strings.IndexByte("0123456789.eE+-_", p.s[p.i]) >= 0 {
		p.i++
	}
	// Python 2 longs: 5L
	lit := strings.ReplaceAll(p.s[start:p.i], "_", "")
	if p.i < len(p.s) && (p.s[p.i] == 'L' || p.s[p.i] == 'l') {
		p.i++
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return 0, p.errf("bad number %q", lit)
	}
	return f, nil
}
