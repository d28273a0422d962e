package redact

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// hostile are secrets with every character that some encoding escapes:
// Jinja and shell syntax, quotes, backslash, &<> (HTML-escaped by Go's
// json.Marshal), '%', '/', a space, non-ASCII (escaped by json.dumps),
// U+2028 (escaped by Go's JSON and YAML) and DEL.
var hostile = []string{
	"Sup3rSecretPassw0rd",
	"{{ 7*7 }}",
	"{% raw %}x{% endraw %}",
	"{#comment#}",
	"it's",
	`say "hi"`,
	`back\slash`,
	"$HOME`id`",
	"a&b<c>d",
	"100%25 done",
	"/etc/pass wd",
	"pässwörd€😀",
	"line\u2028sep\x7fdel",
	`P{{ 7*7 }}{% raw %}{#'"\$HOME` + "`id`" + `&<>%41 x/é😀-and-long-enough-for-sixty-four-chars`,
}

// TestFormsAreWhatGoWrites: the Go encodings are the real encoders' output
// between the quotes.
func TestFormsAreWhatGoWrites(t *testing.T) {
	for _, s := range hostile {
		named := formsByName(s)
		htmlJSON, _ := json.Marshal(s)
		var noHTML bytes.Buffer
		enc := json.NewEncoder(&noHTML)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		single, _ := yaml.Marshal(&yaml.Node{Kind: yaml.ScalarNode, Value: s, Style: yaml.SingleQuotedStyle})
		want := map[string]string{
			"raw":                s,
			"json-go-html":       trimQuotes(string(htmlJSON)),
			"json-go":            trimQuotes(strings.TrimSuffix(noHTML.String(), "\n")),
			"go-quoted":          trimQuotes(strconv.Quote(s)),
			"go-quoted-ascii":    trimQuotes(strconv.QuoteToASCII(s)),
			"yaml-single-quoted": trimQuotes(strings.TrimSuffix(string(single), "\n")),
			"url-query":          url.QueryEscape(s),
			"url-path":           url.PathEscape(s),
		}
		if !bytes.HasPrefix(single, []byte("'")) {
			delete(want, "yaml-single-quoted") // yaml.v3 chose double quotes
		}
		for name, w := range want {
			if got := named[name]; got != w {
				t.Errorf("%q: form %s = %q, want %q", s, name, got, w)
			}
		}
		// yaml.v3 reads the double-quoted form back as the secret.
		var back string
		if err := yaml.Unmarshal([]byte(`"`+named["yaml-double-quoted-go"]+`"`), &back); err != nil || back != s {
			t.Errorf("%q: yaml-double-quoted-go %q reads back as %q (%v)", s, named["yaml-double-quoted-go"], back, err)
		}
		// Every JSON form decodes to the secret.
		for _, name := range []string{"json-python", "json-python-utf8", "json-upper-hex", "json-escaped-slash"} {
			var back string
			if err := json.Unmarshal([]byte(`"`+named[name]+`"`), &back); err != nil || back != s {
				t.Errorf("%q: %s %q decodes to %q (%v)", s, name, named[name], back, err)
			}
		}
		var once string
		if err := json.Unmarshal([]byte(`"`+named["json-in-json"]+`"`), &once); err != nil || once != named["json-python"] {
			t.Errorf("%q: json-in-json %q decodes to %q (%v), want the json-python form", s, named["json-in-json"], once, err)
		}
		// Every URL form decodes to the secret.
		for name, text := range named {
			if !strings.HasPrefix(name, "url-") {
				continue
			}
			if strings.HasPrefix(name, "url-query") || strings.Contains(name, "-plus") {
				text = strings.ReplaceAll(text, "+", " ")
			}
			if dec, err := url.PathUnescape(text); err != nil || dec != s {
				t.Errorf("%q: %s %q decodes to %q (%v)", s, name, text, dec, err)
			}
		}
	}
}

// pyEncoders prints, for each string of a JSON list on stdin, what
// Python's own encoders write: json.dumps (ensure_ascii on and off, as
// heatsible's jsonl callback and to_nice_json write it), repr (Jinja's
// rendering of lists), PyYAML double-quoted (to_yaml) and urllib's quote.
const pyEncoders = `
import json, sys, yaml
from urllib.parse import quote, quote_plus
out = []
for s in json.load(sys.stdin):
    def dq(u):
        t = yaml.dump({"k": s}, default_style='"', width=10**9, allow_unicode=u)
        return t[len('"k": "'):].rstrip("\n")[:-1]
    out.append({
        "json-python": json.dumps(s)[1:-1],
        "json-python-utf8": json.dumps(s, ensure_ascii=False)[1:-1],
        "python-repr": repr(s)[1:-1],
        "yaml-double-quoted-python": dq(False),
        "yaml-double-quoted-python-unicode": dq(True),
        "url-rfc3986": quote(s, safe=""),
        "url-rfc3986-plus": quote_plus(s, safe=""),
        "url-python-quote": quote(s),
    })
json.dump(out, sys.stdout)
`

// TestFormsAreWhatPythonWrites runs Python's encoders (Ansible's side) on
// the hostile secrets and compares.
func TestFormsAreWhatPythonWrites(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	in, _ := json.Marshal(hostile)
	cmd := exec.Command(py, "-c", pyEncoders)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("python3 with PyYAML: %v", err) // PyYAML missing
	}
	var got []map[string]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	for i, s := range hostile {
		named := formsByName(s)
		for name, want := range got[i] {
			if named[name] != want {
				t.Errorf("%q: form %s = %q, Python writes %q", s, name, named[name], want)
			}
		}
	}
}

// TestFormsOfAnsibleOutput runs Ansible with heatsible's callback on a
// hostile value, as a run does, and checks that what it printed holds the
// value only in forms Forms lists: the masked output holds none of them
// and no trace of the value.
func TestFormsOfAnsibleOutput(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook not on PATH")
	}
	secret := hostile[len(hostile)-1]
	dir := t.TempDir()
	vars := dir + "/vars.yml"
	// !unsafe: the value reaches Ansible as data, never as a template.
	doc := "pw: !unsafe '" + strings.ReplaceAll(secret, "'", "''") + "'\n"
	if err := os.WriteFile(vars, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	// pw in a string, in a list (Python's repr), as JSON (to_json), as
	// YAML (to_yaml, to_nice_yaml), URL-encoded, in a structure, and in a
	// failure's message.
	pb := dir + "/pb.yml"
	play := `- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.debug:
        msg: "{{ pw | string }} {{ [pw] | string }} {{ pw | to_json }} {{ pw | to_yaml }} {{ {'k': pw} | to_nice_yaml }} {{ pw | urlencode }}"
    - ansible.builtin.debug:
        msg: "{{ {'k': [pw]} }}"
    - ansible.builtin.fail:
        msg: "refused {{ [pw] }}"
      ignore_errors: true
`
	if err := os.WriteFile(pb, []byte(play), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ansible-playbook", "-i", "localhost,", "-c", "local", "-e", "@"+vars, pb)
	// heatsible's stdout callback (internal/ansible stages it into every run).
	callbacks, err := filepath.Abs(filepath.Join("..", "ansible", "callback_plugins"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(cmd.Environ(), "ANSIBLE_STDOUT_CALLBACK=heatsible_jsonl", "ANSIBLE_CALLBACK_PLUGINS="+callbacks,
		"ANSIBLE_LOCALHOST_WARNING=0", "ANSIBLE_NOCOLOR=1", "ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Skipf("ansible-playbook with heatsible's callback: %v\n%s", err, out)
	}
	m := New(secret)
	if !m.Contains(string(out)) {
		t.Fatalf("Ansible's output holds no form of the secret:\n%s", out)
	}
	masked := m.Mask(string(out))
	for _, f := range Forms(secret) {
		if strings.Contains(masked, f) {
			t.Errorf("form %q survives masking", f)
		}
	}
	// What is left of the value: its distinctive middle in any escaping.
	for _, piece := range []string{"sixty-four", "7*7", "HOME"} {
		if strings.Contains(masked, piece) {
			t.Errorf("masked output still holds %q:\n%s", piece, masked)
		}
	}
	if t.Failed() {
		t.Logf("Ansible printed:\n%s", out)
	}
}

func TestDerivedProxyPassword(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"http://user:p%40ss%2Fw0rd@proxy:3128", []string{"http://user:p%40ss%2Fw0rd@proxy:3128", "p@ss/w0rd"}},
		{"https://user:plain@proxy", []string{"https://user:plain@proxy", "plain"}},
		{"http://user@proxy:3128", []string{"http://user@proxy:3128"}},
		{"no-url@all", []string{"no-url@all"}},
		{"password", []string{"password"}},
	}
	for _, tt := range tests {
		if got := Derived(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Derived(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// The password's encodings: as in the URL (upper-case hex), lower-case
	// hex, decoded, JSON-escaped.
	forms := Forms("http://user:p%40ss%2Fw0rd@proxy:3128")
	for _, want := range []string{"p@ss/w0rd", "p%40ss%2Fw0rd", "p%40ss%2fw0rd", `p@ss\/w0rd`, "p%40ss/w0rd"} {
		if !slices.Contains(forms, want) {
			t.Errorf("Forms of the proxy URL lack %q: %q", want, forms)
		}
	}
}

// TestFormsCollapse: an alphanumeric secret has one form.
func TestFormsCollapse(t *testing.T) {
	if got := Forms("Sup3rSecretPassw0rd"); !slices.Equal(got, []string{"Sup3rSecretPassw0rd"}) {
		t.Errorf("Forms = %q", got)
	}
	named := NamedForms("Sup3rSecretPassw0rd")
	if len(named) != 1 || len(named[0].Names) != len(Encodings()) {
		t.Errorf("NamedForms = %+v, want one form named by all %d encodings", named, len(Encodings()))
	}
}

func formsByName(s string) map[string]string {
	out := map[string]string{}
	for _, f := range NamedForms(s) {
		for _, n := range f.Names {
			out[n] = f.Text
		}
	}
	return out
}

func trimQuotes(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}
