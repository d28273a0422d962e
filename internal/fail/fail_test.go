package fail

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
)

func TestCode(t *testing.T) {
	plain := errors.New("boom")
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, OK},
		{"plain error", plain, Internal},
		{"With", With(Invalid, plain), Invalid},
		{"With wrapped by fmt", fmt.Errorf("validate: %w", With(Refused, plain)), Refused},
		{"outermost code wins", With(HostFailed, fmt.Errorf("x: %w", With(Unreachable, plain))), HostFailed},
		{"cancelled context", fmt.Errorf("run: %w", context.Canceled), Interrupted},
		{"coded cancel keeps its code", With(Discovery, context.Canceled), Discovery},
		{"deadline is not an interrupt", context.DeadlineExceeded, Internal},
		{"joined: first coded", errors.Join(plain, With(Invalid, plain)), Invalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Code(c.err); got != c.want {
				t.Errorf("Code(%v) = %d, want %d", c.err, got, c.want)
			}
		})
	}
}

// TestCodeOfSentinels: a Sentinel's code, through every way an error is
// wrapped (fmt's %w, several %w, errors.Join, an *Error, a type with its
// own Unwrap), and which tag wins when there are several: the outermost,
// and of joined errors the first. The producers' tests (ansible, remote)
// check each of their sentinels against the documented code.
func TestCodeOfSentinels(t *testing.T) {
	busy := Sentinel(Refused, "lock busy")
	gone := Sentinel(Unreachable, "host unreachable")
	failed := Sentinel(HostFailed, "task failed")
	plain := errors.New("boom")
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"sentinel itself", busy, Refused},
		{"wrapped once", fmt.Errorf("locking: %w", busy), Refused},
		{"wrapped twice", fmt.Errorf("run: %w", fmt.Errorf("locking: %w", gone)), Unreachable},
		{"wrapped by its own type", &wrapper{fmt.Errorf("x: %w", failed)}, HostFailed},
		{"after a plain error in one Errorf", fmt.Errorf("%w: %w", plain, gone), Unreachable},
		{"first of two in one Errorf", fmt.Errorf("%w: %w", gone, failed), Unreachable},
		{"joined: plain then sentinel", errors.Join(plain, failed), HostFailed},
		{"joined: first sentinel wins", errors.Join(failed, gone), HostFailed},
		{"joined inside a wrap", fmt.Errorf("phase 2: %w", errors.Join(plain, busy)), Refused},
		{"With outside a sentinel wins", With(Unreachable, errors.Join(failed, gone)), Unreachable},
		{"sentinel outside a With wins", fmt.Errorf("%w: %w", busy, With(Internal, plain)), Refused},
		// lcm joins a release error after the run's, tagged with the
		// run's code: the run's code stays.
		{"run error then release error", With(Code(fmt.Errorf("x: %w", failed)), fmt.Errorf("%w; %w", fmt.Errorf("x: %w", failed), gone)), HostFailed},
		{"run error then release error, no tag", fmt.Errorf("%w; %w", fmt.Errorf("x: %w", failed), gone), HostFailed},
		{"cancel before a sentinel", fmt.Errorf("%w: %w", context.Canceled, gone), Interrupted},
		{"sentinel before a cancel", fmt.Errorf("%w: %w", gone, context.Canceled), Unreachable},
		{"Internal sentinel is a tag", errors.Join(Sentinel(Internal, "playbook"), gone), Internal},
		{"no tag at all", fmt.Errorf("%w; %w", plain, errors.New("other")), Internal},
		{"a foreign ExitCode method is no tag", fmt.Errorf("x: %w", exitCoder{}), Internal},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Code(c.err); got != c.want {
				t.Errorf("Code(%v) = %d, want %d", c.err, got, c.want)
			}
		})
	}
	if !errors.Is(fmt.Errorf("x: %w", busy), busy) || errors.Is(busy, Sentinel(Refused, "lock busy")) {
		t.Error("a Sentinel must be found by errors.Is, and only itself")
	}
	if busy.Error() != "lock busy" {
		t.Errorf("Sentinel's message %q, want %q", busy.Error(), "lock busy")
	}
}

type wrapper struct{ err error }

func (w *wrapper) Error() string { return "wrapped: " + w.err.Error() }
func (w *wrapper) Unwrap() error { return w.err }

// exitCoder has os/exec.ExitError's method: a process's exit status, not
// heatsible's code.
type exitCoder struct{}

func (exitCoder) Error() string { return "exit status 4" }
func (exitCoder) ExitCode() int { return 4 }

func TestWith(t *testing.T) {
	if With(Invalid, nil) != nil {
		t.Fatal("With(code, nil) must stay nil, so that `return fail.With(2, err)` after a nil err returns no error")
	}
	inner := errors.New("the stack was not found")
	err := With(Discovery, inner)
	if err.Error() != inner.Error() {
		t.Errorf("Error() = %q: the code must not change the message (%q)", err.Error(), inner.Error())
	}
	if !errors.Is(err, inner) {
		t.Error("errors.Is cannot see the wrapped error")
	}
}

// TestREADMETableIsTheCodes: the exit codes are an interface (hooks branch
// on them); README.md and docs/cli.md list exactly the codes this package
// returns, no more and no fewer.
func TestREADMETableIsTheCodes(t *testing.T) {
	codes := map[int]bool{OK: true, Internal: true, Invalid: true, Unreachable: true, HostFailed: true, Discovery: true, Refused: true, Interrupted: true}
	row := regexp.MustCompile(`^\| ([0-9]+) \| `)
	for _, doc := range []string{"../../README.md", "../../docs/cli.md"} {
		f, err := os.Open(doc)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		inTable := false
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "## Exit codes" {
				inTable = true
				continue
			}
			if inTable && len(line) > 2 && line[:3] == "## " {
				break
			}
			if m := row.FindStringSubmatch(line); inTable && m != nil {
				n, _ := strconv.Atoi(m[1])
				seen[n] = true
			}
		}
		f.Close()
		for n := range codes {
			if !seen[n] {
				t.Errorf("%s: the exit code table has no row for %d", doc, n)
			}
		}
		for n := range seen {
			if !codes[n] {
				t.Errorf("%s: the exit code table lists %d, which package fail never returns", doc, n)
			}
		}
	}
}
