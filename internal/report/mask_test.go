package report

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/redact"
)

const testSecret = "R3view-S3cret-9z"

// TestReportOfARealCheckRunHasNoSecret runs ansible-playbook --check --diff
// on two local hosts with a playbook that puts the secret into a diff, a
// debug report and a failure message, and checks that neither form of the
// report holds it: the runner masks events, and the report is made only
// from events.
func TestReportOfARealCheckRunHasNoSecret(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook not on PATH (install Debian's ansible to run the real-ansible tests)")
	}
	pb, err := os.ReadFile("testdata/mask/playbook.yml")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	inv := "all:\n  vars:\n    ansible_connection: local\n    ansible_python_interpreter: /usr/bin/python3\n  hosts:\n    alpha: {}\n    beta: {}\n"
	b, err := ansible.NewBundle(ansible.BundleSpec{
		Cluster: "test", Operation: "review", BaseDir: t.TempDir(),
		Inventory: []byte(inv), Playbook: pb,
		GroupVars: map[string][]byte{"all": []byte("work_dir: " + work + "\n")},
		Secrets:   []byte("heatsible_secrets:\n  probe_password: \"" + testSecret + "\"\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	res, runErr := ansible.LocalRunner{}.Run(context.Background(), b, ansible.PlaybookOptions{Check: true, Diff: true})
	if !errors.Is(runErr, ansible.ErrHostFailed) {
		t.Fatalf("run error %v, want a failed host (beta)", runErr)
	}
	r := Build(Input{Operation: "review", Cluster: "test", Where: "local", Check: true, Result: res, Err: runErr})
	var md, js bytes.Buffer
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"markdown": md.String(), "json": js.String()} {
		if strings.Contains(out, testSecret) {
			t.Errorf("the %s report holds the secret:\n%s", name, out)
		}
		// The diff, the report and the failure are there, masked.
		for _, want := range []string{"+password=" + redact.Masked, "the password is " + redact.Masked, "refused: " + redact.Masked} {
			if !strings.Contains(out, want) {
				t.Errorf("the %s report lacks %q:\n%s", name, want, out)
			}
		}
	}
	if r.Summary != "2 changes on 2 hosts would be made" {
		t.Errorf("summary %q", r.Summary)
	}
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Errorf("check mode wrote files: %v", entries)
	}
	if !strings.HasSuffix(md.String(), "**2 changes on 2 hosts would be made.**\n") {
		t.Errorf("markdown does not end with the summary")
	}
}
