package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// TestShellWord reads the values the bed's envq writes (testbed/bin/bed)
// as sh does; it needs no bed. Each value goes through the bed's own
// quoting, then sh reads it back, then shellWord must agree.
func TestShellWord(t *testing.T) {
	values := []string{
		"plain", "", "a=b", "/x/y:z@w%+,.-_",
		"{{ 7*7 }} {% raw %} {# ' \" \\ $HOME `id` &<> % é;|*?()!~",
		"'", "''", `\`, `"`, "it's", "a\tb",
	}
	for _, v := range values {
		// envq's quoting: single quotes, each ' as '\''.
		q := "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
		got, err := shellWord(q)
		if err != nil || got != v {
			t.Errorf("shellWord(%s) = %q, %v; want %q", q, got, err, v)
		}
		if sh, err := exec.Command("sh", "-c", "printf %s "+q).Output(); err == nil && string(sh) != v {
			t.Errorf("sh reads %s as %q, want %q (the test's quoting is wrong)", q, sh, v)
		}
	}
	for in, want := range map[string]string{`"a\"b\\c\$d"`: `a"b\c$d`, `a\ b`: "a b", `"x'y"`: "x'y", `'a'"b"c`: "abc"} {
		if got, err := shellWord(in); err != nil || got != want {
			t.Errorf("shellWord(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"'open", `"open`, "$HOME", "`id`", `"$x"`, "a b", "a;b"} {
		if got, err := shellWord(bad); err == nil {
			t.Errorf("shellWord(%s) = %q, want an error", bad, got)
		}
	}
}
