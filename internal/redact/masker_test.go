package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestMaskEveryForm: each form of each hostile secret, inside other text,
// becomes one Masked and nothing else changes.
func TestMaskEveryForm(t *testing.T) {
	for _, secret := range hostile {
		m := New(secret)
		for _, f := range NamedForms(secret) {
			t.Run(fmt.Sprintf("%s/%s", secret, f.Names[0]), func(t *testing.T) {
				in := "before[" + f.Text + "]after"
				if got, want := m.Mask(in), "before["+Masked+"]after"; got != want {
					t.Errorf("Mask(%q) = %q, want %q", in, got, want)
				}
				if !m.Contains(in) {
					t.Errorf("Contains(%q) = false", in)
				}
			})
		}
	}
}

// TestMaskOverlapping: secrets that overlap or contain one another are
// masked as the union of their matches, never leaving a piece behind.
func TestMaskOverlapping(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
		in      string
		want    string
	}{
		{"one contains the other", []string{"secret", "secret-long"}, "a secret-long b secret c", "a ******** b ******** c"},
		{"overlap, shorter first", []string{"xabc", "abcdef"}, "xabcdef!", "********!"},
		{"overlap, longer first", []string{"abcdef", "defxyz"}, "abcdefxyz", "********"},
		{"adjacent", []string{"s3cret"}, "s3crets3cret", "********"},
		{"repeated overlap", []string{"aaaa"}, "aaaaaaa-aaaa", "********-********"},
		{"a short explicit secret", []string{"x9"}, "explicit x9 value", "explicit ******** value"},
		{"no secret", []string{"s3cret"}, "nothing here", "nothing here"},
		{"empty secret ignored", []string{""}, "text", "text"},
		{"the mask itself is no secret", []string{Masked}, "a " + Masked, "a " + Masked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := New(tt.secrets...).Mask(tt.in); got != tt.want {
				t.Errorf("Mask(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	var nilMasker *Masker
	if nilMasker.Mask("x") != "x" || nilMasker.Contains("x") || nilMasker.Truncate("xyz", 2) != "xy…" {
		t.Error("a nil Masker must pass text through")
	}
}

// TestTruncate: text is masked before it is cut, so a secret straddling
// the cut leaves nothing; a cut that ends in a prefix (>= MinPrefix
// bytes) of a form masks it; cuts fall on character boundaries.
func TestTruncate(t *testing.T) {
	secret := hostile[len(hostile)-1]
	m := New(secret)
	pad := strings.Repeat("x", 2000)
	for _, f := range NamedForms(secret) {
		for _, at := range []int{1, 3, 4, 10, len(f.Text) - 1} {
			if at <= 0 || at >= len(f.Text) {
				continue
			}
			t.Run(fmt.Sprintf("%s/cut-after-%d", f.Names[0], at), func(t *testing.T) {
				// The secret straddles byte 2000.
				in := pad[:2000-at] + f.Text + " and more" + pad
				got := m.Truncate(in, 2000)
				checkNoPrefix(t, got, secret)
				if !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || len(got) > 2000+len("…") {
					t.Errorf("Truncate = ...%q (%d bytes)", got[max(0, len(got)-100):], len(got))
				}
				// The text arrived cut already: its end is the form's
				// beginning.
				pre := pad[:100] + f.Text[:at]
				got = m.Truncate(pre+strings.Repeat("y", 50), len(pre))
				if at >= MinPrefix {
					checkNoPrefix(t, got, secret)
				} else if got != pre+"…" {
					t.Errorf("a %d-byte prefix was masked: %q", at, got)
				}
			})
		}
	}
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"0123456789", 4, "0123…"},
		{"éééé", 3, "é…"},               // never half a character
		{"abc " + secret, 6, "abc **…"}, // a cut mask is still a mask
	}
	for _, tt := range tests {
		if got := m.Truncate(tt.in, tt.n); got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// checkNoPrefix fails if s holds MinPrefix or more bytes of the start of a
// form of secret right before the ellipsis.
func checkNoPrefix(t *testing.T, s, secret string) {
	t.Helper()
	body := strings.TrimSuffix(s, "…")
	for _, f := range Forms(secret) {
		for k := MinPrefix; k <= len(f); k++ {
			if strings.HasSuffix(body, f[:k]) {
				t.Errorf("...%q ends with %q, the first %d bytes of form %q", s[max(0, len(s)-100):], f[:k], k, f)
				return
			}
		}
		if strings.Contains(body, f) {
			t.Errorf("...%q holds form %q", s[max(0, len(s)-100):], f)
		}
	}
}

// TestMaskJSON: documents written by Go (with and without HTML escaping)
// and Python hold the secret in values, keys, nested strings and numbers;
// masked, they hold no form of it and stay valid JSON.
func TestMaskJSON(t *testing.T) {
	for _, secret := range append(hostile, "20260101", "true-secret") {
		m := New(secret)
		doc := map[string]any{
			"msg":    "x " + secret + " y",
			secret:   "as a key",
			"list":   []any{secret, 1, true, nil, "a\u2028b<&>"},
			"nested": map[string]any{"stdout": `{"password": "` + goJSON(secret, true) + `"}`},
			"number": 20260101,
		}
		goHTML, _ := json.Marshal(doc)
		goPlain, _ := Marshal(doc)
		var indented bytes.Buffer
		_ = EncodeJSON(&indented, doc, "  ")
		pyDoc := `{"msg": "` + pyJSON("x "+secret+" y", true, false) + `", "n": 1}`
		for name, in := range map[string][]byte{"json.Marshal": goHTML, "Marshal": goPlain, "EncodeJSON": indented.Bytes(), "python": []byte(pyDoc)} {
			out := m.MaskJSON(in)
			if !json.Valid(out) {
				t.Errorf("%q %s: masked JSON is not valid:\n%s", secret, name, out)
			}
			if m.Contains(string(out)) {
				t.Errorf("%q %s: masked JSON still holds a form:\n%s", secret, name, out)
			}
			var back map[string]any
			_ = json.Unmarshal(out, &back)
			if s, _ := back["msg"].(string); s != "x "+Masked+" y" {
				t.Errorf("%q %s: msg reads %q after masking", secret, name, back["msg"])
			}
		}
	}
	// Text that is not JSON is masked as text.
	m := New("s3cret")
	if got := string(m.MaskJSON([]byte("not json s3cret"))); got != "not json "+Masked {
		t.Errorf("MaskJSON of text = %q", got)
	}
	if got := string(m.MaskJSON([]byte(`{"a":"b"}`))); got != `{"a":"b"}` {
		t.Errorf("MaskJSON without a secret = %q", got)
	}
}

// TestMaskJSONDecodesStrings: each string is masked as it reads once
// decoded: a secret in JSON inside a JSON string is found; an escape that
// merely looks like a form is not.
func TestMaskJSONDecodesStrings(t *testing.T) {
	m := New(`ab\`, "a&b<c>")
	inner, _ := json.Marshal(map[string]string{"pw": "a&b<c>"}) // \u0026 inside
	outer, _ := json.Marshal(map[string]string{"stdout": string(inner), "k": `xab\y`, "n": "abé"})
	outer = bytes.Replace(outer, []byte("é"), []byte(`\u00e9`), 1)
	got := string(m.MaskJSON(outer))
	want := `{"k":"x********y","n":"ab\u00e9","stdout":"{\"pw\":\"********\"}"}`
	if got != want {
		t.Errorf("MaskJSON =\n%s\nwant\n%s", got, want)
	}
	// A secret across the structure is masked as text.
	m = New(`a","b`)
	if got := string(m.MaskJSON([]byte(`["a","b"]`))); strings.Contains(got, `a","b`) {
		t.Errorf("MaskJSON across strings = %s", got)
	}
}

func TestMarshalNoHTMLEscape(t *testing.T) {
	b, err := Marshal(map[string]string{"a": "&<>"})
	if err != nil || string(b) != `{"a":"&<>"}` {
		t.Errorf("Marshal = %s, %v", b, err)
	}
}

func TestFromYAML(t *testing.T) {
	m, err := FromYAML([]byte("heatsible_secrets:\n  a: long-secret-1\n  b: [\"long-secret-2\"]\n  short: abc\n  port: 22\n  on: true\nproxy_env:\n  http_proxy: http://u:p%40ss@proxy:3128\n"), []string{"x9"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		{"pw=long-secret-1.", "pw=********."},
		{"long-secret-2 and long-secret-1", "******** and ********"},
		{"port 22 stays, true stays, abc stays", "port 22 stays, true stays, abc stays"},
		{"explicit x9 value", "explicit ******** value"},
		{"heatsible_secrets keys stay", "heatsible_secrets keys stay"},
		{"proxy http://u:p%40ss@proxy:3128 or p@ss", "proxy ******** or ********"},
	}
	for _, tt := range tests {
		if got := m.Mask(tt.in); got != tt.want {
			t.Errorf("Mask(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if _, err := FromYAML([]byte("a: [b"), nil); err == nil {
		t.Error("FromYAML of broken YAML succeeded")
	}
	got := m.Secrets()
	sort.Strings(got)
	if strings.Join(got, " ") != "http://u:p%40ss@proxy:3128 long-secret-1 long-secret-2 x9" {
		t.Errorf("Secrets() = %q", got)
	}
}

func TestMaskYAML(t *testing.T) {
	masked, err := MaskYAML([]byte("heatsible_secrets:\n  master_password: s3cret\n  list: [a, b]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := "heatsible_secrets:\n    master_password: '********'\n    list: ['********', '********']\n"
	if string(masked) != want {
		t.Errorf("MaskYAML =\n%s\nwant\n%s", masked, want)
	}
	if out, _ := MaskYAML(nil); string(out) != "{}\n" {
		t.Errorf("MaskYAML(nil) = %q", out)
	}
}

// oldMasker is the masker heatsible had before this package (one
// strings.Contains and ReplaceAll per raw secret), for the benchmark.
type oldMasker struct{ values []string }

func (m *oldMasker) Mask(s string) string {
	for _, v := range m.values {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Masked)
		}
	}
	return s
}

// benchLines are a run's events as they are masked: mostly without a
// secret, some long (a diff), one in fifty with a secret.
func benchLines() []string {
	var lines []string
	for i := 0; i < 1000; i++ {
		l := fmt.Sprintf(`{"kind":"result","play":"NFS","task":"nfs_client : Install the NFS client %d","host":"worker-%d","status":"ok","msg":"All items completed"}`, i, i%16)
		if i%10 == 0 {
			l += strings.Repeat(" +/srv/nfs/export-"+fmt.Sprint(i)+" 10.231.0.0/24(rw,sync,no_subtree_check)\n", 20)
		}
		if i%50 == 0 {
			l += " password: " + hostile[len(hostile)-1]
		}
		lines = append(lines, l)
	}
	return lines
}

// BenchmarkMask compares the masker (every form of five hostile secrets,
// one pass) with the old one (the raw text of the same secrets).
func BenchmarkMask(b *testing.B) {
	secrets := []string{hostile[len(hostile)-1], "{{ 7*7 }}-worker", "pässwörd€😀-storage", `say "hi" to lb`, "http://user:p%40ss@proxy:3128"}
	lines := benchLines()
	var size int64
	for _, l := range lines {
		size += int64(len(l))
	}
	b.Run("redact", func(b *testing.B) {
		m := New(secrets...)
		b.SetBytes(size)
		for b.Loop() {
			for _, l := range lines {
				_ = m.Mask(l)
			}
		}
	})
	b.Run("old-raw-only", func(b *testing.B) {
		m := &oldMasker{values: secrets}
		b.SetBytes(size)
		for b.Loop() {
			for _, l := range lines {
				_ = m.Mask(l)
			}
		}
	})
	b.Run("old-every-form", func(b *testing.B) {
		// The old loop given every form: what it would cost to get the
		// same coverage without the automaton.
		var forms []string
		for _, s := range secrets {
			forms = append(forms, Forms(s)...)
		}
		m := &oldMasker{values: forms}
		b.SetBytes(size)
		for b.Loop() {
			for _, l := range lines {
				_ = m.Mask(l)
			}
		}
	})
}

// BenchmarkNew is the cost of building a masker (once per run and record).
func BenchmarkNew(b *testing.B) {
	secrets := []string{hostile[len(hostile)-1], "{{ 7*7 }}-worker", "pässwörd€😀-storage", `say "hi" to lb`, "http://user:p%40ss@proxy:3128"}
	for b.Loop() {
		_ = New(secrets...)
	}
}
