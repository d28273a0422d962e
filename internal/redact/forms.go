// Package redact knows every form a secret can take on its way to output
// (raw, JSON-escaped by Go or Python, Go- and Python-quoted, YAML-quoted,
// URL-encoded, shell-quoted) and masks all of them in one pass over the
// text, before anything is truncated.
//
// A secret reaches output in more than its raw form: Go's encoding/json
// writes "&<>" as \u0026\u003c\u003e, Ansible's jsonl callback (Python's
// json.dumps with ensure_ascii) writes "é" as \u00e9 and DEL as \u007f,
// Jinja renders a list of strings with Python's repr, a proxy URL carries
// its password %-encoded. A masker that only knows the raw text misses all
// of those; Forms lists them, so that the masker and the tests that search
// output for leaks agree on what a leak is.
//
// It is heatsible's one masker (Masker, MaskYAML, MaskJSON, Masked): the run
// bundle and its events (package ansible), the run records (package state),
// the review report and the CLI's output all mask through it.
package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"
)

// Form is one encoding of a secret.
type Form struct {
	// Names are the encodings that produce Text (several collapse into one
	// text when the secret has nothing they escape).
	Names []string
	// Text is what the secret looks like in that encoding, without the
	// quotes that would surround it.
	Text string
}

// encoding is one way a secret is written out.
type encoding struct {
	name string
	enc  func(string) string
}

// encodings are every form a secret may take in heatsible's output, in
// Ansible's output and in files on the Ansible host. Each yields the text
// between the quotes (if any): the form of a secret inside a longer string
// is the same text, because all of these escape one character at a time.
var encodings = []encoding{
	{"raw", func(s string) string { return s }},
	// Go's encoding/json: json.Marshal escapes &<> (HTML-safe), an Encoder
	// with SetEscapeHTML(false) does not; both escape U+2028/U+2029.
	{"json-go-html", func(s string) string { return goJSON(s, true) }},
	{"json-go", func(s string) string { return goJSON(s, false) }},
	// Python's json.dumps: ensure_ascii=True (the default, and what the
	// jsonl callback (heatsible's, as ansible.posix.jsonl) and Ansible's to_json write) escapes
	// everything outside ' '..'~', DEL included, as lower-case \uXXXX
	// with surrogate pairs; ensure_ascii=False (to_nice_json) only
	// escapes '"', '\' and control characters.
	{"json-python", func(s string) string { return pyJSON(s, true, false) }},
	{"json-python-utf8", func(s string) string { return pyJSON(s, false, false) }},
	// Other JSON writers: upper-case hex digits, and '/' written as '\/'.
	{"json-upper-hex", func(s string) string { return upperHex(pyJSON(s, true, false)) }},
	{"json-escaped-slash", func(s string) string { return pyJSON(s, true, true) }},
	// JSON inside a JSON string: a module's JSON stdout in -v output, or
	// Ansible's module arguments in its -vvv log.
	{"json-in-json", func(s string) string { return pyJSON(pyJSON(s, true, false), true, false) }},
	// Go's %q (error messages quoting a value) and %+q.
	{"go-quoted", func(s string) string { return unquote(strconv.Quote(s)) }},
	{"go-quoted-ascii", func(s string) string { return unquote(strconv.QuoteToASCII(s)) }},
	// Python's repr, which Jinja uses to render lists and dicts of
	// strings ("{{ [password] }}" renders ['...']).
	{"python-repr", pyRepr},
	// YAML: single-quoted ('' for '), double-quoted as gopkg.in/yaml.v3
	// and as PyYAML write it (with and without allow_unicode, which
	// Ansible's to_yaml / to_nice_yaml pass through).
	{"yaml-single-quoted", func(s string) string { return strings.ReplaceAll(s, "'", "''") }},
	{"yaml-double-quoted-go", goYAMLDouble},
	{"yaml-double-quoted-python", func(s string) string { return pyYAMLDouble(s, false) }},
	{"yaml-double-quoted-python-unicode", func(s string) string { return pyYAMLDouble(s, true) }},
	// URL encodings, for a password in a proxy URL's user info: Go's
	// query, path and user info escaping, RFC 3986 (Python's
	// quote(safe='') and quote_plus), Python's quote() keeping '/'; each
	// with upper-case (as written by Go and Python) and lower-case hex.
	{"url-query", url.QueryEscape},
	{"url-path", url.PathEscape},
	{"url-userinfo", func(s string) string { return strings.TrimPrefix(url.UserPassword("u", s).String(), "u:") }},
	{"url-rfc3986", func(s string) string { return pctEncode(s, "", false) }},
	{"url-rfc3986-plus", func(s string) string { return pctEncode(s, "", true) }},
	{"url-python-quote", func(s string) string { return pctEncode(s, "/", false) }},
	{"url-query-lower-hex", func(s string) string { return lowerPct(url.QueryEscape(s)) }},
	{"url-path-lower-hex", func(s string) string { return lowerPct(url.PathEscape(s)) }},
	{"url-userinfo-lower-hex", func(s string) string {
		return lowerPct(strings.TrimPrefix(url.UserPassword("u", s).String(), "u:"))
	}},
	{"url-rfc3986-lower-hex", func(s string) string { return lowerPct(pctEncode(s, "", false)) }},
	{"url-rfc3986-plus-lower-hex", func(s string) string { return lowerPct(pctEncode(s, "", true)) }},
	// POSIX shell single quotes, as shlex.quote ('"'"') and most shell
	// code ('\'') write a quote inside them (commands in Ansible's -vvv
	// log).
	{"shell-single-quoted-shlex", func(s string) string { return strings.ReplaceAll(s, "'", `'"'"'`) }},
	{"shell-single-quoted", func(s string) string { return strings.ReplaceAll(s, "'", `'\''`) }},
}

// Forms returns every distinct form of secret, the raw text first: the
// texts Masker masks and the texts a search for leaks must find nowhere.
// A proxy URL's password (percent-decoded) counts as a secret of its own
// (see Derived), so its forms are included.
func Forms(secret string) []string {
	var out []string
	for _, f := range NamedForms(secret) {
		out = append(out, f.Text)
	}
	return out
}

// NamedForms is Forms with the names of the encodings that yield each text.
func NamedForms(secret string) []Form {
	var out []Form
	idx := map[string]int{}
	add := func(name, text string) {
		if text == "" {
			return
		}
		if i, ok := idx[text]; ok {
			out[i].Names = append(out[i].Names, name)
			return
		}
		idx[text] = len(out)
		out = append(out, Form{Names: []string{name}, Text: text})
	}
	for _, s := range Derived(secret) {
		prefix := ""
		if s != secret {
			prefix = "url-password/"
		}
		for _, e := range encodings {
			add(prefix+e.name, e.enc(s))
		}
		// Every form once more as Ansible's jsonl callback prints it
		// (json.dumps, ensure_ascii): a module's message that quotes a
		// list (repr) or a YAML dump is a string inside the event's JSON.
		for _, e := range encodings {
			add(prefix+"jsonl/"+e.name, pyJSON(e.enc(s), true, false))
		}
	}
	return out
}

// Encodings returns the names of every encoding Forms applies, in order
// (each also inside a jsonl string: "jsonl/NAME").
func Encodings() []string {
	names := make([]string, 0, 2*len(encodings))
	for _, e := range encodings {
		names = append(names, e.name)
	}
	for _, e := range encodings {
		names = append(names, "jsonl/"+e.name)
	}
	return names
}

// Derived returns secret and the secrets hidden in it: for a URL with a
// password in its user info ("http://user:pass@proxy:3128"), the password
// as it reads once percent-decoded ("p@ss" for "p%40ss"), which tools
// print decoded (curl's and apt's messages) or re-encode their own way.
// The user name is not a secret and is not derived.
func Derived(secret string) []string {
	out := []string{secret}
	if !strings.Contains(secret, "@") {
		return out
	}
	u, err := url.Parse(secret)
	if err != nil || u.User == nil {
		return out
	}
	if p, ok := u.User.Password(); ok && p != "" && p != secret {
		out = append(out, p)
	}
	return out
}

func unquote(q string) string { return q[1 : len(q)-1] }

// goJSON is encoding/json's string escaping.
func goJSON(s string, html bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		return s
	}
	return unquote(strings.TrimSuffix(buf.String(), "\n"))
}

// pyJSON is Python's json.dumps string escaping (ensure_ascii or not);
// escapeSlash also writes '/' as '\/'.
func pyJSON(s string, ascii, escapeSlash bool) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '/':
			if escapeSlash {
				b.WriteString(`\/`)
			} else {
				b.WriteByte('/')
			}
		default:
			switch {
			case r < 0x20 || (ascii && r > 0x7e):
				if r > 0xffff {
					r1, r2 := utf16Pair(r)
					fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
				} else {
					fmt.Fprintf(&b, `\u%04x`, r)
				}
			default:
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

// upperHex writes the hex digits of \uXXXX escapes in upper case.
func upperHex(s string) string {
	b := []byte(s)
	for i := 0; i+1 < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if b[i+1] == 'u' && i+5 < len(b) {
			for j := i + 2; j < i+6; j++ {
				if b[j] >= 'a' && b[j] <= 'f' {
					b[j] -= 'a' - 'A'
				}
			}
			i += 5
			continue
		}
		i++ // the escaped character: in "\\u" the u is not an escape
	}
	return string(b)
}

// pyRepr is the text between the quotes of Python 3's repr(s).
func pyRepr(s string) string {
	quote := '\''
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == quote || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x7f || unicode.IsPrint(r):
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	return b.String()
}

// goYAMLDouble is the text gopkg.in/yaml.v3 writes between double quotes.
func goYAMLDouble(s string) string {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle}
	out, err := yaml.Marshal(n)
	if err != nil {
		return s
	}
	t := strings.TrimSuffix(string(out), "\n")
	if len(t) < 2 || t[0] != '"' || t[len(t)-1] != '"' || strings.Contains(t, "\n") {
		return s
	}
	return unquote(t)
}

// yamlEscapes are the short escapes of YAML double-quoted scalars.
var yamlEscapes = map[rune]string{
	0: `\0`, 7: `\a`, 8: `\b`, 9: `\t`, 10: `\n`, 11: `\v`, 12: `\f`, 13: `\r`, 27: `\e`,
	'"': `\"`, '\\': `\\`, 0x85: `\N`, 0xa0: `\_`, 0x2028: `\L`, 0x2029: `\P`,
}

// pyYAMLDouble is PyYAML's Emitter.write_double_quoted (without its line
// folding, which long passwords with spaces would need at width 80).
func pyYAMLDouble(s string, allowUnicode bool) string {
	var b strings.Builder
	for _, r := range s {
		printable := (r >= 0x20 && r <= 0x7e) ||
			(allowUnicode && ((r >= 0xa0 && r <= 0xd7ff) || (r >= 0xe000 && r <= 0xfffd)))
		if printable && r != '"' && r != '\\' && r != 0x85 && r != 0x2028 && r != 0x2029 && r != 0xfeff {
			b.WriteRune(r)
			continue
		}
		if e, ok := yamlEscapes[r]; ok {
			b.WriteString(e)
			continue
		}
		switch {
		case r <= 0xff:
			fmt.Fprintf(&b, `\x%02X`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			fmt.Fprintf(&b, `\U%08X`, r)
		}
	}
	return b.String()
}

// pctEncode percent-encodes every byte but RFC 3986's unreserved ones
// (letters, digits, "-._~") and those in safe; plus writes ' ' as '+'.
func pctEncode(s, safe string, plus bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.', c == '_', c == '~',
			strings.IndexByte(safe, c) >= 0:
			b.WriteByte(c)
		case c == ' ' && plus:
			b.WriteByte('+')
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// lowerPct writes the hex digits of %XX escapes in lower case.
func lowerPct(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			for j := i + 1; j <= i+2; j++ {
				if b[j] >= 'A' && b[j] <= 'F' {
					b[j] += 'a' - 'A'
				}
			}
			i += 2
		}
	}
	return string(b)
}
