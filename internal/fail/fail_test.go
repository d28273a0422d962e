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
