// Package archtest checks that the Go packages import each other only in
// the data-flow order docs/architecture.md lists.
package archtest

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/heatsible/heatsible"

// listRE is one numbered line of docs/architecture.md's package list.
var listRE = regexp.MustCompile("^[0-9]+\\. `([a-z0-9/._-]+)`")

// outsideRE names the packages outside the flow (tests and tools).
var outsideRE = regexp.MustCompile("`([a-z0-9/._-]+)`")

// layers reads the ordered package list and the packages outside the flow.
func layers(t *testing.T) (order map[string]int, outside map[string]bool) {
	t.Helper()
	f, err := os.Open("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	order, outside = map[string]int{}, map[string]bool{}
	inOutside := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := listRE.FindStringSubmatch(line); m != nil {
			if _, dup := order[m[1]]; dup {
				t.Fatalf("docs/architecture.md lists %s twice", m[1])
			}
			order[m[1]] = len(order)
			continue
		}
		if strings.HasPrefix(line, "Outside the flow") {
			inOutside = true
		}
		if inOutside {
			if line == "" {
				inOutside = false
				continue
			}
			for _, m := range outsideRE.FindAllStringSubmatch(line, -1) {
				outside[m[1]] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(order) < 10 {
		t.Fatalf("docs/architecture.md: found %d packages in the list; the numbered lines changed shape", len(order))
	}
	return order, outside
}

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Imports    []string
}

// TestImportsFollowTheDataFlow: no package imports one listed below it,
// and every package of the module is listed (in the flow or outside it).
func TestImportsFollowTheDataFlow(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	order, outside := layers(t)
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := map[string]bool{}
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if name == "" {
			name = "." // the module root
		}
		seen[name] = true
		rank, listed := order[name]
		if !listed {
			if !outside[name] {
				t.Errorf("%s is not in docs/architecture.md: put it in the list where the data flow has it", name)
			}
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(imp, module+"/")
			r, ok := order[dep]
			switch {
			case !ok:
				t.Errorf("%s imports %s, which is not in the data flow (docs/architecture.md)", name, dep)
			case r >= rank:
				t.Errorf("%s (number %d) imports %s (number %d), which comes after it in the data flow", name, rank+1, dep, r+1)
			}
		}
	}
	for name := range order {
		if !seen[name] {
			t.Errorf("docs/architecture.md lists %s, which go list does not know", name)
		}
	}
}
