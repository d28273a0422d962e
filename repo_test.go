package heatsible

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoCompiledPythonCommitted: .gitignore keeps __pycache__ out, but
// "git add -f" does not care; a committed .pyc goes stale with its source
// and ships whatever it was compiled from.
func TestNoCompiledPythonCommitted(t *testing.T) {
	out, err := exec.Command("git", "ls-files").Output()
	if err != nil {
		t.Skipf("not a git checkout (git ls-files: %v)", err)
	}
	for _, f := range strings.Split(string(out), "\n") {
		if strings.HasSuffix(f, ".pyc") || strings.Contains(f, "__pycache__/") {
			t.Errorf("compiled Python is committed: %s (git rm --cached it)", f)
		}
	}
}
