// Package archtest checks that the Go packages import each other exactly
// as the picture in docs/architecture.md draws them.
package archtest

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/heatsible/heatsible"

var (
	// nodeRE is a node of the mermaid picture: id["package/path"].
	nodeRE = regexp.MustCompile(`^\s+([a-z0-9_]+)\["([a-z0-9/._-]+)"\]$`)
	// edgeRE is an arrow: importer --> imported.
	edgeRE = regexp.MustCompile(`^\s+([a-z0-9_]+) --> ([a-z0-9_]+)$`)
	// outsideRE names the packages outside the flow (tests and tools).
	outsideRE = regexp.MustCompile("`([a-z0-9/._-]+)`")
)

// picture is what docs/architecture.md draws: the packages in the flow,
// the allowed imports between them, and the packages outside the flow.
type picture struct {
	packages map[string]bool
	edges    map[[2]string]bool
	outside  map[string]bool
}

func readPicture(t *testing.T, path string) picture {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pic := picture{packages: map[string]bool{}, edges: map[[2]string]bool{}, outside: map[string]bool{}}
	ids := map[string]string{}
	inMermaid, inOutside := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case line == "```mermaid":
			inMermaid = true
			continue
		case inMermaid && line == "```":
			inMermaid = false
			continue
		case strings.HasPrefix(line, "Outside the flow"):
			inOutside = true
		}
		if inMermaid {
			if m := nodeRE.FindStringSubmatch(line); m != nil {
				if _, dup := ids[m[1]]; dup {
					t.Fatalf("%s:%d: node id %s drawn twice", path, n, m[1])
				}
				ids[m[1]] = m[2]
				pic.packages[m[2]] = true
			} else if m := edgeRE.FindStringSubmatch(line); m != nil {
				from, ok1 := ids[m[1]]
				to, ok2 := ids[m[2]]
				if !ok1 || !ok2 {
					t.Fatalf("%s:%d: arrow %s --> %s names a node not declared above it", path, n, m[1], m[2])
				}
				pic.edges[[2]string{from, to}] = true
			} else if strings.TrimSpace(line) != "flowchart BT" {
				t.Fatalf("%s:%d: %q is neither a node (id[\"path\"]) nor an arrow (a --> b)", path, n, line)
			}
			continue
		}
		if inOutside {
			if line == "" {
				inOutside = false
				continue
			}
			for _, m := range outsideRE.FindAllStringSubmatch(line, -1) {
				pic.outside[m[1]] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(pic.packages) < 10 || len(pic.edges) < 10 {
		t.Fatalf("%s: found %d packages and %d arrows in the mermaid picture; it changed shape", path, len(pic.packages), len(pic.edges))
	}
	return pic
}

// imports is go list's view: each package of the module and the packages
// of the module it imports.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	all := map[string][]string{}
	for dec.More() {
		var p struct {
			ImportPath string
			Dir        string
			GoFiles    []string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		track(t, p.Dir, p.GoFiles)
		name := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if name == "" {
			name = "." // the module root
		}
		var deps []string
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module+"/") {
				deps = append(deps, strings.TrimPrefix(imp, module+"/"))
			}
		}
		all[name] = deps
	}
	return all
}

// track opens dir and stats its Go files, so that go test's cache knows
// this test read them: go list, which reads them for it, runs in another
// process, and without this a new import (or a new file) would leave the
// cached "ok" standing.
func track(t *testing.T, dir string, files []string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = d.Readdirnames(-1)
	d.Close()
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
}

// check returns every way the code and the picture disagree.
func check(pic picture, code map[string][]string) []string {
	var problems []string
	used := map[[2]string]bool{}
	for name, deps := range code {
		if !pic.packages[name] {
			if !pic.outside[name] {
				problems = append(problems, name+" is not in docs/architecture.md: draw it in the picture (with its arrows) or list it outside the flow")
			}
			continue
		}
		for _, dep := range deps {
			e := [2]string{name, dep}
			if !pic.edges[e] {
				problems = append(problems, name+" imports "+dep+", an arrow docs/architecture.md's picture does not draw: draw it (if the design allows it) or remove the import")
			}
			used[e] = true
		}
	}
	for e := range pic.edges {
		if !used[e] {
			problems = append(problems, "docs/architecture.md draws "+e[0]+" --> "+e[1]+", but "+e[0]+" does not import "+e[1]+": remove the arrow")
		}
	}
	for name := range pic.packages {
		if _, ok := code[name]; !ok {
			problems = append(problems, "docs/architecture.md draws "+name+", which go list does not know")
		}
	}
	sort.Strings(problems)
	return problems
}

// TestImportsAreThePicture: every import between the module's packages is
// an arrow of the picture, every arrow an import, every package drawn or
// outside the flow.
func TestImportsAreThePicture(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	for _, p := range check(readPicture(t, "../../docs/architecture.md"), imports(t)) {
		t.Error(p)
	}
}

// TestCheckFindsEachDisagreement: the check itself, on a small picture.
func TestCheckFindsEachDisagreement(t *testing.T) {
	pic := picture{
		packages: map[string]bool{"a": true, "b": true, "c": true},
		edges:    map[[2]string]bool{{"a", "b"}: true, {"b", "c"}: true},
		outside:  map[string]bool{"tools": true},
	}
	for _, c := range []struct {
		name string
		code map[string][]string
		want string
	}{
		{"agrees", map[string][]string{"a": {"b"}, "b": {"c"}, "c": nil, "tools": {"a", "c"}}, ""},
		{"new import", map[string][]string{"a": {"b", "c"}, "b": {"c"}, "c": nil}, "a imports c, an arrow"},
		{"import gone", map[string][]string{"a": {"b"}, "b": nil, "c": nil}, "draws b --> c, but b does not import c"},
		{"package not drawn", map[string][]string{"a": {"b"}, "b": {"c"}, "c": nil, "d": nil}, "d is not in docs/architecture.md"},
		{"package gone", map[string][]string{"a": {"b"}, "b": nil}, "draws c, which go list does not know"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := strings.Join(check(pic, c.code), "\n")
			if c.want == "" && got != "" || !strings.Contains(got, c.want) {
				t.Errorf("check: %q, want %q", got, c.want)
			}
		})
	}
}
