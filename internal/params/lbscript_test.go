package params

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDetectLBInterface(t *testing.T) {
	for _, c := range []struct {
		name, script string
		want         LBInterface
	}{
		{"heatsible's marker", "#!/bin/sh\n# heatsible-external-lb-interface: 1\n", LBHeatsible},
		{"marker with other spacing", "#!/bin/sh\n#heatsible-external-lb-interface:1   \n", LBHeatsible},
		{"indented marker", "#!/bin/sh\n  # heatsible-external-lb-interface: 1\n", LBHeatsible},
		{"marker wins over getopts", "#!/bin/bash\nwhile getopts m:w: o; do :; done\n# heatsible-external-lb-interface: 1\n", LBHeatsible},
		{"Tacker's getopts string", "#!/bin/bash\nif [ \"$OPTIND\" = 1 ]; then\n    while getopts dom:w:h OPT; do\n", LBTacker},
		{"double-quoted", "while getopts \"m:w:h\" opt; do", LBTacker},
		{"single-quoted, silent mode", "while getopts ':hw:m:' opt; do", LBTacker},
		{"after a semicolon", "x=1;getopts m:w: o", LBTacker},
		{"CRLF line ends", "#!/bin/bash\r\nwhile getopts \"m:w:\" opt; do\r\n", LBTacker},
		{"the sample script", readSample(t), LBHeatsible},
		{"the seeds' stand-in", readFile(t, filepath.Join(testdata, "seeds", "package", "Scripts", "ExternalLB_installation.sh")), LBTacker},
		{"heatsible's Tacker-contract test script", readFile(t, filepath.Join(testdata, "package", "Scripts", "install_external_lb.sh")), LBTacker},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := DetectLBInterface([]byte(c.script))
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestDetectLBInterfaceRefuses(t *testing.T) {
	for _, c := range []struct{ name, script string }{
		{"empty", ""},
		{"a plain stand-in", "#!/bin/sh\necho install\n"},
		{"m without argument", "while getopts mw: o; do :; done"},
		{"w without argument", "while getopts m:w o; do :; done"},
		{"only -m", "while getopts m: o; do :; done"},
		{"getopts in a comment", "#!/bin/bash\n# while getopts m:w: o; do\n"},
		{"marker of another version", "# heatsible-external-lb-interface: 2\n"},
		{"marker in the middle of a line", "echo '# heatsible-external-lb-interface: 1'\n"},
		{"a word ending in getopts", "mygetopts m:w: o\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := DetectLBInterface([]byte(c.script))
			if err == nil {
				t.Fatalf("got %q, want a refusal", got)
			}
			for _, want := range []string{LBInterfaceMarker, `getopts "m:w:"`, "add one of the two", "docs/external-lb.md"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal does not say %q: %v", want, err)
				}
			}
		})
	}
}

// TestValidateRefusesUnknownLBScript: validate with the package refuses a
// script that fits neither interface, at its field path, and accepts both
// kinds.
func TestValidateRefusesUnknownLBScript(t *testing.T) {
	pkg := t.TempDir()
	scripts := map[string]string{
		"Scripts/plain.sh":     "#!/bin/sh\necho hi\n",
		"Scripts/tacker.sh":    "#!/bin/bash\nwhile getopts m:w: o; do :; done\n",
		"Scripts/heatsible.sh": "#!/bin/sh\n" + LBInterfaceMarker + "\n",
	}
	for name, body := range scripts {
		if err := os.MkdirAll(filepath.Join(pkg, "Scripts"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		path    string
		refused bool
	}{{"Scripts/plain.sh", true}, {"./Scripts/tacker.sh", false}, {"Scripts/heatsible.sh", false}} {
		req, err := Load(filepath.Join(testdata, "requests", "external_lb.json"))
		if err != nil {
			t.Fatal(err)
		}
		req.Cluster.ExternalLBParam.ScriptPath = c.path
		req.Cluster.PVRegistrationParams = nil // the manifests are not in this package
		err = req.Validate(Options{PackageDir: pkg, RequirePackage: true})
		if !c.refused {
			if err != nil {
				t.Errorf("%s: %v", c.path, err)
			}
			continue
		}
		ps, ok := err.(Problems)
		if !ok || len(ps) != 1 || ps[0].Path != Prefix+".external_lb_param.script_path" || !strings.Contains(ps[0].Msg, "fits neither") {
			t.Errorf("%s: want one problem at external_lb_param.script_path, got %v", c.path, err)
		}
	}
}

func readSample(t *testing.T) string {
	return readFile(t, filepath.Join("..", "..", "contrib", "external-lb", "haproxy-lb.sh"))
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
