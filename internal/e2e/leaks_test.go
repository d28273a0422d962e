package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/redact"
)

// ansibleHostDirs are where a run could leave files on the Ansible host:
// the users' homes (the SSH user's ~/.heatsible staging and lock, and
// ~/.ansible), root's, and the temporary directories.
var ansibleHostDirs = []string{"/home", "/root/.heatsible", "/root/.ansible", "/tmp", "/var/tmp"}

// TestNoFormOfThePasswordAnywhere runs instantiate-end (-o json -v, with a
// JSON review report) and a dry run (--check with a Markdown report), then
// searches everything those runs wrote for every form of the request's
// passwords (redact.Forms: raw, JSON-escaped by Go and Python, quoted for
// Go, Python, YAML and the shell, URL-encoded, each also inside a jsonl
// string): stdout, stderr, the -o json document, both review reports, the
// run records (run.log, report.md, bundle/) and the Ansible host's files
// afterwards. JSON is also searched string by string once decoded, so a
// secret inside JSON inside JSON counts. It prints the forms it searched
// for and fails on any hit.
func TestNoFormOfThePasswordAnywhere(t *testing.T) {
	b := needBed(t)
	secrets := b.secretValues(t)
	forms := searchForms(secrets)
	t.Logf("searching for %d forms of %d secret value(s):", len(forms), len(secrets))
	for i, f := range forms {
		t.Logf("  form %d (%d bytes): %s", i+1, len(f.Text), strings.Join(f.Names, ", "))
	}

	state := t.TempDir()
	reports := t.TempDir()
	var leaks []string
	runs := []struct {
		name string
		args []string
	}{
		{"instantiate-end -o json -v --report review.json", b.opArgs("instantiate-end", "--report", filepath.Join(reports, "review.json"))},
		{"instantiate-end -o text -v --check --report review.md", setFlag(b.opArgs("instantiate-end", "--check", "--report", filepath.Join(reports, "review.md")), "-o", "text")},
	}
	for _, r := range runs {
		cmd := b.command(t, state, r.args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		t.Logf("%s: %v in %s", r.name, err, time.Since(start).Round(time.Millisecond))
		if err != nil {
			t.Fatalf("%s: %v\n%s", r.name, err, tail(stderr.String(), 30))
		}
		leaks = append(leaks, searchText(r.name+": stdout", stdout.String(), forms)...)
		leaks = append(leaks, searchText(r.name+": stderr", stderr.String(), forms)...)
		// The runs did run Ansible on the hosts (no vacuous search).
		if strings.Contains(r.name, "-o json") {
			if res := parseRun(t, stdout.String()); len(res.Recap) < 3 {
				t.Errorf("%s: recap of %d hosts, want the bed's hosts", r.name, len(res.Recap))
			}
		} else if !strings.Contains(stderr.String(), "HOST") || !strings.Contains(stderr.String(), "storage") {
			t.Errorf("%s: no recap on stderr:\n%s", r.name, tail(stderr.String(), 20))
		}
	}
	for _, f := range []string{"review.json", "review.md"} {
		if b, err := os.ReadFile(filepath.Join(reports, f)); err != nil || !strings.Contains(string(b), "changes on") {
			t.Errorf("%s: %v, want a review report", f, err)
		}
	}
	for _, dir := range []string{reports, state} {
		found, n := searchDir(t, dir, forms)
		t.Logf("searched %d files under %s", n, dir)
		leaks = append(leaks, found...)
	}
	if n := countFiles(t, state, "run.log") + countFiles(t, state, "report.md"); n < 4 {
		t.Errorf("the state directory holds %d run.log/report.md files, want a record of each run", n)
	}
	if n := countFiles(t, state, "secrets.yml"); n < 2 {
		t.Errorf("the records hold %d bundle/secrets.yml, want one per run", n)
	}
	remote, err := b.searchAnsibleHost(forms)
	if err != nil {
		t.Fatalf("searching the Ansible host: %v", err)
	}
	leaks = append(leaks, remote...)
	t.Logf("searched the Ansible host's %s", strings.Join(ansibleHostDirs, " "))
	for _, l := range leaks {
		t.Errorf("leak: %s", l)
	}
	t.Logf("%d hits", len(leaks))
}

// secretValues are the request's passwords (and proxy URLs with user
// info) and the bed's password.
func (b *bed) secretValues(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				walk(k, c)
			}
		case []any:
			for _, c := range v {
				walk(key, c)
			}
		case string:
			if strings.HasSuffix(key, "password") || (strings.HasSuffix(key, "_proxy") && strings.Contains(v, "@")) {
				add(v)
			}
		}
	}
	walk("", b.requestDoc(t))
	add(b.env["BED_PASSWORD"])
	if len(out) == 0 {
		t.Fatal("the bed's request holds no password")
	}
	return out
}

// searchForms is every form of every secret, longest first.
func searchForms(secrets []string) []redact.Form {
	var forms []redact.Form
	seen := map[string]bool{}
	for _, s := range secrets {
		for _, f := range redact.NamedForms(s) {
			if !seen[f.Text] {
				seen[f.Text] = true
				forms = append(forms, f)
			}
		}
	}
	sort.SliceStable(forms, func(i, j int) bool { return len(forms[i].Text) > len(forms[j].Text) })
	return forms
}

// searchText names each form text holds, as it is and, where text is JSON
// (the whole of it, or line by line), in every string once decoded (and in
// strings that are JSON themselves, decoded again).
func searchText(where, text string, forms []redact.Form) []string {
	var hits []string
	seen := map[string]bool{}
	look := func(in, s string) {
		for _, f := range forms {
			if strings.Contains(s, f.Text) && !seen[f.Text] {
				seen[f.Text] = true
				hits = append(hits, fmt.Sprintf("%s holds form %q%s", where, strings.Join(f.Names, ", "), in))
			}
		}
	}
	look("", text)
	var docs []string
	if json.Valid([]byte(text)) {
		docs = append(docs, text)
	} else {
		for _, l := range strings.Split(text, "\n") {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, "{") && json.Valid([]byte(l)) {
				docs = append(docs, l)
			}
		}
	}
	for _, d := range docs {
		var v any
		if json.Unmarshal([]byte(d), &v) == nil {
			jsonStrings(v, 0, func(s string) { look(" (in a decoded JSON string)", s) })
		}
	}
	return hits
}

// jsonStrings calls f on every string (and key) of v, and on the strings
// of strings that are JSON documents themselves, up to three levels deep.
func jsonStrings(v any, depth int, f func(string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			f(k)
			jsonStrings(c, depth, f)
		}
	case []any:
		for _, c := range v {
			jsonStrings(c, depth, f)
		}
	case string:
		f(v)
		if t := strings.TrimSpace(v); depth < 3 && (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) {
			var inner any
			if json.Unmarshal([]byte(t), &inner) == nil {
				jsonStrings(inner, depth+1, f)
			}
		}
	}
}

// searchDir searches every regular file under dir; it returns the hits and
// how many files it read.
func searchDir(t *testing.T, dir string, forms []redact.Form) ([]string, int) {
	t.Helper()
	var hits []string
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		hits = append(hits, searchText(p, string(data), forms)...)
		return nil
	})
	if err != nil {
		t.Fatalf("searching %s: %v", dir, err)
	}
	return hits, n
}

func countFiles(t *testing.T, dir, name string) int {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == name && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

// grepScript lists the files under the directories given as arguments (those
// that exist) that hold any of the fixed strings on stdin, one per line (the
// strings never reach a command line). grep exits 1 when nothing matched
// and 2 when it could not read something (a file that went away while it
// walked /tmp): what it could not read, it says on stderr, which the test
// prints.
const grepScript = `n=$#
for d in "$@"; do [ -e "$d" ] && set -- "$@" "$d"; done
shift "$n"
[ $# -gt 0 ] || exit 0
grep -rlaF -D skip -f - -- "$@"
rc=$?
[ "$rc" -le 2 ] || echo "grep failed: $rc" >&2
[ "$rc" -le 2 ]`

// grepCmd is the search of dirs for forms: sh -c grepScript, run by prefix
// (e.g. "bed exec ansible --"), with the forms on stdin.
func grepCmd(prefix []string, forms []redact.Form, dirs ...string) *exec.Cmd {
	args := append(append(append([]string{}, prefix...), "sh", "-c", grepScript, "sh"), dirs...)
	cmd := exec.Command(args[0], args[1:]...)
	var patterns strings.Builder
	for _, f := range forms {
		patterns.WriteString(f.Text + "\n")
	}
	cmd.Stdin = strings.NewReader(patterns.String())
	return cmd
}

// searchAnsibleHost greps the Ansible host's directories for every form,
// and names the forms in each file it finds (read back here, so that the
// secret is printed nowhere).
func (b *bed) searchAnsibleHost(forms []redact.Form) ([]string, error) {
	bedBin := filepath.Join(b.root, "testbed", "bin", "bed")
	cmd := grepCmd([]string{bedBin, "exec", "ansible", "--"}, forms, ansibleHostDirs...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, stderr.String())
	}
	var hits []string
	// A file that went away while grep walked is no leak; anything else
	// grep could not read might hide one.
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if l != "" && !strings.HasSuffix(l, "No such file or directory") {
			hits = append(hits, "grep on the Ansible host could not read everything: "+l)
		}
	}
	for _, f := range strings.Fields(string(out)) {
		data, err := exec.Command(bedBin, "exec", "ansible", "--", "cat", f).Output()
		if err != nil {
			hits = append(hits, "the Ansible host's "+f+" (unreadable)")
			continue
		}
		found := searchText("the Ansible host's "+f, string(data), forms)
		if len(found) == 0 {
			found = []string{"the Ansible host's " + f}
		}
		hits = append(hits, found...)
	}
	return hits, nil
}
