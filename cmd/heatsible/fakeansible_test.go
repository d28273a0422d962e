package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withFakeCore makes a stand-in ansible-playbook (a shell script) answer
// --version as ansible-core 2.14.18 does, naming a Python (a wrapper of
// /usr/bin/python3 that sees a fake ansible package and the collections
// heatsible's roles use, all under dir): what heatsible's probe asks of an
// ansible-playbook that is not a Python script itself (internal/ansible,
// probe.go). dir must be readable by whoever runs the stand-in.
func withFakeCore(t *testing.T, script, dir string) string {
	t.Helper()
	site := filepath.Join(dir, "fake-ansible-site")
	files := map[string]string{
		filepath.Join(site, "ansible", "__init__.py"):                                                             "",
		filepath.Join(site, "ansible", "release.py"):                                                              "__version__ = '2.14.18'\n",
		filepath.Join(site, "ansible", "constants.py"):                                                            "COLLECTIONS_PATHS = []\nCOLLECTIONS_SCAN_SYS_PATH = True\n",
		filepath.Join(site, "ansible_collections", "ansible", "posix", "plugins", "modules", "mount.py"):          "",
		filepath.Join(site, "ansible_collections", "community", "general", "plugins", "modules", "filesystem.py"): "",
		filepath.Join(dir, "fake-python3"):                                                                        "#!/bin/sh\nPYTHONPATH=" + site + " exec /usr/bin/python3 -S \"$@\"\n",
	}
	for p, body := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	first, rest, _ := strings.Cut(script, "\n")
	return first + "\nif [ \"${1:-}\" = --version ]; then printf 'ansible-playbook [core 2.14.18]\\n  python version = 3.11.2 (%s)\\n' '" +
		filepath.Join(dir, "fake-python3") + "'; exit 0; fi\n" + rest
}
