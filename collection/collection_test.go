package collection

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/heatsible/heatsible/roles"
)

// plugins returns the collection's plugins of kind ("modules", "action",
// "filter", "module_utils"): name -> file content.
func plugins(t *testing.T, kind string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	files, err := fs.Glob(FS, "plugins/"+kind+"/*.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := fs.ReadFile(FS, f)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(path.Base(f), ".py")] = b
	}
	return out
}

var (
	filtersRE   = regexp.MustCompile(`(?s)\n    def filters\(self\):\n        return \{(.*?)\}`)
	filterKeyRE = regexp.MustCompile(`['"]([a-z0-9_]+)['"]\s*:`)
)

// filterNames maps each filter the collection defines to the files that
// define it.
func filterNames(t *testing.T) map[string][]string {
	t.Helper()
	names := map[string][]string{}
	for file, src := range plugins(t, "filter") {
		m := filtersRE.FindSubmatch(src)
		if m == nil {
			t.Errorf("plugins/filter/%s.py: no FilterModule.filters returning a dict literal", file)
			continue
		}
		for _, k := range filterKeyRE.FindAllSubmatch(m[1], -1) {
			names[string(k[1])] = append(names[string(k[1])], file)
		}
	}
	return names
}

// TestLayout: what ansible-galaxy and ansible-test need at the collection's
// root: galaxy.yml naming heatsible.nfv with a semantic version, and
// meta/runtime.yml's requires_ansible.
func TestLayout(t *testing.T) {
	var galaxy struct {
		Namespace, Name, Version, Readme string
		Authors                          []string
	}
	b, err := fs.ReadFile(FS, "galaxy.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &galaxy); err != nil {
		t.Fatalf("galaxy.yml: %v", err)
	}
	if galaxy.Namespace != Namespace || galaxy.Name != Name || !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(galaxy.Version) || len(galaxy.Authors) == 0 {
		t.Errorf("galaxy.yml: %+v; want namespace %s, name %s, a version X.Y.Z, authors", galaxy, Namespace, Name)
	}
	if _, err := fs.Stat(FS, galaxy.Readme); err != nil {
		t.Errorf("galaxy.yml's readme: %v", err)
	}
	var runtime struct {
		RequiresAnsible string `yaml:"requires_ansible"`
	}
	b, err = fs.ReadFile(FS, "meta/runtime.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &runtime); err != nil || runtime.RequiresAnsible != ">=2.14" {
		t.Errorf("meta/runtime.yml: requires_ansible %q (%v), want >=2.14 (Debian 12's ansible-core)", runtime.RequiresAnsible, err)
	}
	err = fs.WalkDir(FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == "__pycache__" || strings.HasSuffix(p, ".pyc") || strings.HasPrefix(p, "tests") {
			t.Errorf("embedded: %s (tests and compiled Python stay out of the bundle)", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEachPluginOnce: one copy of each plugin. The roles carry no plugin
// directories of their own (a role's library/ or filter_plugins/ would be
// a second copy, or a plugin outside the collection); no two plugin files
// are the same; no filter name is defined twice (Ansible would take one of
// them silently); every action plugin has its module, which documents it
// (ansible-doc, ansible-lint's argument checks), and every module's
// DOCUMENTATION names it.
func TestEachPluginOnce(t *testing.T) {
	err := fs.WalkDir(roles.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch n := d.Name(); {
		case d.IsDir() && (n == "library" || n == "module_utils" || strings.HasSuffix(n, "_plugins")):
			t.Errorf("roles/%s: a role's own plugin directory; its plugins belong in collection/plugins/", p)
		case !d.IsDir() && strings.HasSuffix(n, ".py") && !strings.Contains(p, "/files/") && !strings.Contains(p, "/tests/"):
			t.Errorf("roles/%s: Python outside a role's files/ or tests/ (a plugin belongs in collection/plugins/)", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	seen := map[string]string{}
	for _, kind := range []string{"modules", "action", "filter", "module_utils"} {
		for name, src := range plugins(t, kind) {
			key := string(bytes.TrimSpace(src))
			if other, ok := seen[key]; ok {
				t.Errorf("plugins/%s/%s.py is a copy of %s", kind, name, other)
			}
			seen[key] = "plugins/" + kind + "/" + name + ".py"
		}
	}
	for name, files := range filterNames(t) {
		if len(files) > 1 {
			sort.Strings(files)
			t.Errorf("filter %s is defined in %v", name, files)
		}
	}
	modules := plugins(t, "modules")
	for name := range plugins(t, "action") {
		if _, ok := modules[name]; !ok {
			t.Errorf("action plugin %s has no plugins/modules/%s.py documenting it", name, name)
		}
	}
	for name, src := range modules {
		if !bytes.Contains(src, []byte("\nmodule: "+name+"\n")) {
			t.Errorf("plugins/modules/%s.py: its DOCUMENTATION does not say module: %s", name, name)
		}
	}
	if len(modules) == 0 || len(filterNames(t)) == 0 {
		t.Errorf("found %d modules and %d filters: the plugins are not where this test looks", len(modules), len(filterNames(t)))
	}
}

var fqcnRE = regexp.MustCompile(`\b` + regexp.QuoteMeta(FQCN) + `\.([A-Za-z0-9_]+)`)

// TestNamesUsedExist: every heatsible.nfv.X that the roles, the playbooks
// and the tests that write plays use is a module, action plugin or filter
// of the collection, and no role calls one of the collection's filters
// by its short name (which resolves only inside the collection itself):
// a typo fails here, not on a host.
func TestNamesUsedExist(t *testing.T) {
	known := map[string]bool{}
	for _, kind := range []string{"modules", "action"} {
		for name := range plugins(t, kind) {
			known[name] = true
		}
	}
	filters := filterNames(t)
	short := make([]string, 0, len(filters))
	for name := range filters {
		known[name] = true
		short = append(short, regexp.QuoteMeta(name))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(short))) // longer names first where one is a prefix
	shortRE := regexp.MustCompile(`\|[ \t]*(` + strings.Join(short, "|") + `)\b`)

	used := 0
	for _, dir := range []string{"../roles", "../playbooks"} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			switch filepath.Ext(p) {
			case ".yml", ".yaml", ".j2", ".tmpl", ".go", ".md":
			default:
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range fqcnRE.FindAllSubmatch(b, -1) {
				used++
				if !known[string(m[1])] {
					t.Errorf("%s: %s.%s is not a module, action plugin or filter of collection/plugins", p, FQCN, m[1])
				}
			}
			if ext := filepath.Ext(p); ext != ".go" && ext != ".md" {
				for _, m := range shortRE.FindAllSubmatch(b, -1) {
					t.Errorf("%s: the filter %s without its collection: write %s.%s", p, m[1], FQCN, m[1])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if used == 0 {
		t.Error("found no heatsible.nfv.* name in roles/ and playbooks/: the test reads the wrong place")
	}
}

// TestLay: the collection laid for a collections path, as a bundle lays it.
func TestLay(t *testing.T) {
	root, err := Lay(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"galaxy.yml", "meta/runtime.yml", "plugins/action/refuse.py", "plugins/modules/refuse.py"} {
		if _, err := os.Stat(filepath.Join(root, "ansible_collections", "heatsible", "nfv", rel)); err != nil {
			t.Error(err)
		}
	}
}
