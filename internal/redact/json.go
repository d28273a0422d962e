package redact

import (
	"bytes"
	"encoding/json"
	"io"
	"sort"
)

// Marshal is json.Marshal without HTML escaping: JSON that people read
// (run records, -o json, reports, messages) keeps "&<>" as they are instead
// of \u0026\u003c\u003e, a form that is hard to read and that a search
// for a leaked secret must not have to guess.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// EncodeJSON writes v to w as JSON without HTML escaping, indented by
// indent if it is not empty, with a final newline (as json.Encoder does).
func EncodeJSON(w io.Writer, v any, indent string) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	return enc.Encode(v)
}

// jsonDelims end a number or literal.
var jsonDelims = []byte("{}[],: \t\r\n\"")

// MaskJSON masks every form of every secret in the JSON document doc and
// keeps it valid JSON. Each string (keys too) is decoded, masked and
// written again (without HTML escaping) if it changed: so a secret in a
// string that holds JSON itself (a module's JSON stdout, a message that
// quotes a JSON value) is found in the form it has there, not only in the
// forms it takes once encoded twice. A number or literal that holds a form
// becomes the string "********". Only if a form survives that (a secret
// made of JSON punctuation, matching across the document's structure) is
// the text masked as plain text, which may leave it invalid: no secret is
// worth valid JSON. Text that is not JSON is masked as text.
func (m *Masker) MaskJSON(doc []byte) []byte {
	if m == nil || m.ac == nil {
		return doc
	}
	if !json.Valid(doc) {
		return []byte(m.Mask(string(doc)))
	}
	var out []byte // nil until something changes
	last := 0
	replace := func(start, end int, with []byte) {
		if out == nil {
			out = make([]byte, 0, len(doc))
		}
		out = append(out, doc[last:start]...)
		out = append(out, with...)
		last = end
	}
	for i := 0; i < len(doc); {
		switch c := doc[i]; {
		case c == '"':
			end, escaped := i+1, false
			for doc[end] != '"' {
				if doc[end] == '\\' {
					end++
					escaped = true
				}
				end++
			}
			end++ // past the closing quote
			lit := doc[i:end]
			var s string
			if escaped {
				if err := json.Unmarshal(lit, &s); err != nil {
					return []byte(m.Mask(string(doc)))
				}
			} else {
				s = string(lit[1 : len(lit)-1])
			}
			if masked := m.Mask(s); masked != s {
				enc, err := Marshal(masked)
				if err != nil {
					return []byte(m.Mask(string(doc)))
				}
				replace(i, end, enc)
			}
			i = end
		case bytes.IndexByte(jsonDelims, c) >= 0:
			i++
		default: // a number, true, false or null
			start := i
			for i < len(doc) && bytes.IndexByte(jsonDelims, doc[i]) < 0 {
				i++
			}
			if m.ac.first(string(doc[start:i])) {
				replace(start, i, []byte(`"`+Masked+`"`))
			}
		}
	}
	if out != nil {
		out = append(out, doc[last:]...)
	} else {
		out = doc
	}
	if m.acrossStrings(out) {
		return []byte(m.Mask(string(out)))
	}
	return out
}

// acrossStrings reports whether a form matches the JSON text doc other than
// inside one string: across its structure, or in a number. (Inside a
// string whose decoded text holds no form, a match is an escape sequence
// that happens to read like one, as `ab\` in "ab\u00e9".)
func (m *Masker) acrossStrings(doc []byte) bool {
	spans := m.ac.spans(string(doc), nil)
	if len(spans) == 0 {
		return false
	}
	type lit struct{ start, end int } // content, without the quotes
	var lits []lit
	for i := 0; i < len(doc); i++ {
		if doc[i] != '"' {
			continue
		}
		start := i + 1
		for i = start; doc[i] != '"'; i++ {
			if doc[i] == '\\' {
				i++
			}
		}
		lits = append(lits, lit{start, i})
	}
	for _, sp := range spans {
		k := sort.Search(len(lits), func(k int) bool { return lits[k].end >= sp.end })
		if k == len(lits) || lits[k].start > sp.start {
			return true
		}
	}
	return false
}
