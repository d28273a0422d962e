package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heatsible/heatsible/internal/fail"
)

// lister is an error printed one line per item (as params.Problems is).
type lister []string

func (l lister) Error() string { return strings.Join(l, "\n") }

func (l *lister) NameLog(mask func(string) string, log string) {
	c := make(lister, len(*l))
	for i, s := range *l {
		c[i] = mask(s)
	}
	c[len(c)-1] += " (log: " + log + ")"
	*l = c
}

// TestRecordFailureNamesTheLog: a run that fails before it starts leaves a
// record; its error keeps its code, names the log, and a LogNamer found in
// it with errors.As (the CLI's one-problem-per-line print) is masked and
// names the log too, whatever its type (state knows no params).
func TestRecordFailureNamesTheLog(t *testing.T) {
	t.Setenv("HEATSIBLE_STATE_DIR", t.TempDir())
	const secret = "s3cret-pw"
	err := RecordFailure(RunInfo{Operation: "instantiate-end", Stack: "k8s-a", Secrets: []string{secret}},
		fail.With(fail.Invalid, fmt.Errorf("request: %w", lister{"a: bad", "b: password " + secret})))
	log := LogPath(err)
	if log == "" || !strings.HasSuffix(err.Error(), " (log: "+log+")") || filepath.Base(log) != RunLog {
		t.Fatalf("err %q, log %q: want the error to name the run log", err, log)
	}
	if fail.Code(err) != fail.Invalid {
		t.Errorf("exit code %d, want %d", fail.Code(err), fail.Invalid)
	}
	var l lister
	if !errors.As(err, &l) || len(l) != 2 || l[0] != "a: bad" || !strings.HasPrefix(l[1], "b: password ") || !strings.HasSuffix(l[1], " (log: "+log+")") {
		t.Fatalf("errors.As found %q", l)
	}
	if strings.Contains(l[1], secret) || strings.Contains(err.Error(), secret) {
		t.Errorf("the secret is in %q / %q", l[1], err)
	}
	b, rerr := os.ReadFile(log)
	if rerr != nil {
		t.Fatal(rerr)
	}
	for _, want := range []string{`"kind":"start"`, `"cluster":"k8s-a"`, `"kind":"error"`, `"exit_code":2`, `"kind":"end"`, `"ok":false`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("run.log lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), secret) {
		t.Errorf("run.log holds the secret:\n%s", b)
	}
}
