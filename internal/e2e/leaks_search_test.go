package e2e

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heatsible/heatsible/internal/redact"
)

// TestLeakSearchFindsPlantedForms checks the search TestNoFormOfThePasswordAnywhere
// relies on, without the bed: files planted with one form each of a
// hostile password (raw, as json.Marshal writes it, as Python's repr
// writes it, URL-encoded, and only inside JSON inside a JSON line) are all
// found, by the Go search and by the grep that runs on the Ansible host
// (run here with the same script), and a clean file is not.
func TestLeakSearchFindsPlantedForms(t *testing.T) {
	secret := `P{{ 7*7 }}{% raw %}{#'"\$HOME` + "`id`" + `&<>%41 x/é-long-enough`
	forms := searchForms([]string{secret})
	goHTML, _ := json.Marshal(secret)
	inner, _ := json.Marshal(map[string]string{"pw": secret})
	line, _ := json.Marshal(map[string]string{"msg": string(inner)}) // the secret escaped twice
	dir := t.TempDir()
	planted := map[string]string{
		"raw.txt":         "password: " + secret + "\n",
		"go-json.log":     `{"msg":` + string(goHTML) + "}\n",
		"repr.txt":        "refused ['" + strings.ReplaceAll(strings.ReplaceAll(secret, `\`, `\\`), "'", `\'`) + "']\n",
		"url.txt":         "http://" + url.UserPassword("u", secret).String() + "@proxy:3128\n",
		"sub/nested.json": "not json\n" + string(line) + "\n",
	}
	for name, data := range planted {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "clean.txt"), []byte("password: "+redact.Masked+"\n&<> P{{ 7*7 }}\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	hits, n := searchDir(t, dir, forms)
	if n != len(planted)+1 {
		t.Errorf("read %d files, want %d", n, len(planted)+1)
	}
	for name := range planted {
		if !hasHit(hits, filepath.Join(dir, name)) {
			t.Errorf("the search missed %s", name)
		}
	}
	if hasHit(hits, filepath.Join(dir, "clean.txt")) {
		t.Errorf("the search flags clean.txt: %q", hits)
	}

	// The Ansible host's search: grep with the forms on stdin. Only the
	// twice-escaped form needs the decoding the Go search does; the other
	// files must be listed.
	out, err := grepCmd(nil, forms, dir).Output()
	if err != nil {
		t.Fatalf("grep: %v", err)
	}
	listed := strings.Fields(string(out))
	for name := range planted {
		if name == "sub/nested.json" {
			continue
		}
		if !contains(listed, filepath.Join(dir, name)) {
			t.Errorf("grep did not list %s: %q", name, listed)
		}
	}
	if contains(listed, filepath.Join(dir, "clean.txt")) {
		t.Errorf("grep lists clean.txt")
	}
	// Nothing found is not an error.
	if out, err := grepCmd(nil, forms, filepath.Join(dir, "clean.txt")).Output(); err != nil || len(out) != 0 {
		t.Errorf("grep of a clean file: %q, %v", out, err)
	}
}

func hasHit(hits []string, file string) bool {
	for _, h := range hits {
		if strings.HasPrefix(h, file+" ") {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}
