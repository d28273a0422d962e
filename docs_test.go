// Package heatsible holds repository-wide checks only: the program is
// cmd/heatsible, its packages are under internal/.
package heatsible

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// readmeMax is the README's budget: a newcomer reads it to the end; the
// rest lives in docs/.
const readmeMax = 10240

// docFiles are the Markdown files whose relative links are checked.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	for _, pattern := range []string{"docs/*.md", "roles/*/README.md", "contrib/*/README.md", "bench/*.md", "testbed/*/README.md"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatalf("glob %s: %v", pattern, err)
		}
		if len(m) == 0 {
			t.Fatalf("no files match %s", pattern)
		}
		files = append(files, m...)
	}
	return files
}

func TestReadmeSize(t *testing.T) {
	fi, err := os.Stat("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > readmeMax {
		t.Errorf("README.md is %d bytes, more than %d: move details into docs/ and link them", fi.Size(), readmeMax)
	}
}

// TestDocLinks fails on a relative link of README.md, docs/*.md or a
// README of a role, contrib/ or testbed/ (or bench/*.md) whose file does not
// exist, or whose #anchor names no heading of the target (anchors as GitHub
// makes them).
func TestDocLinks(t *testing.T) {
	anchors := map[string]map[string]bool{} // file -> its anchors
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		a := headingAnchors(string(b))
		anchors[path] = a
		return a, nil
	}
	checked := 0
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range relativeLinks(string(b)) {
			checked++
			if err := checkLink(file, l, anchorsOf); err != nil {
				t.Errorf("%s:%d: link %q: %v", file, l.line, l.dest, err)
			}
		}
	}
	t.Logf("%d relative links checked", checked)
	if checked < 50 {
		t.Errorf("only %d relative links found: is the link parser broken?", checked)
	}
}

func checkLink(file string, l link, anchorsOf func(string) (map[string]bool, error)) error {
	dest, frag, _ := strings.Cut(l.dest, "#")
	p, err := url.PathUnescape(dest)
	if err != nil {
		return fmt.Errorf("bad escape: %w", err)
	}
	target := file
	if p != "" {
		if strings.HasPrefix(p, "/") {
			target = filepath.Clean(strings.TrimPrefix(p, "/"))
		} else {
			target = filepath.Join(filepath.Dir(file), p)
		}
		if rel, err := filepath.Rel(".", target); err != nil || strings.HasPrefix(rel, "..") {
			return fmt.Errorf("points outside the repository")
		}
		if _, err := os.Stat(target); err != nil {
			return fmt.Errorf("%s does not exist", target)
		}
	}
	if frag == "" {
		return nil
	}
	if !strings.HasSuffix(target, ".md") {
		return fmt.Errorf("#%s on %s, which is not Markdown", frag, target)
	}
	a, err := anchorsOf(target)
	if err != nil {
		return err
	}
	if !a[frag] {
		return fmt.Errorf("%s has no heading with anchor #%s", target, frag)
	}
	return nil
}

type link struct {
	dest string
	line int
}

var (
	inlineLink = regexp.MustCompile(`\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)`)
	refDef     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*(\S+)`)
	scheme     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	atxHeading = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	mdLink     = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// relativeLinks returns the link destinations of md that are not URLs with a
// scheme, outside fenced code blocks and code spans.
func relativeLinks(md string) []link {
	var out []link
	for i, line := range proseLines(md) {
		if line == "" {
			continue
		}
		line = stripCodeSpans(line)
		var dests []string
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			dests = append(dests, strings.Trim(m[1], "<>"))
		}
		if m := refDef.FindStringSubmatch(line); m != nil {
			dests = append(dests, m[1])
		}
		for _, d := range dests {
			if d == "" || scheme.MatchString(d) {
				continue
			}
			out = append(out, link{dest: d, line: i + 1})
		}
	}
	return out
}

// proseLines returns md's lines with those inside fenced code blocks
// blanked, so that line numbers stay right.
func proseLines(md string) []string {
	lines := strings.Split(md, "\n")
	fence := ""
	for i, l := range lines {
		trim := strings.TrimLeft(l, " ")
		switch {
		case fence != "":
			if strings.HasPrefix(trim, fence) && strings.Trim(trim, fence[:1]+" \t") == "" {
				fence = ""
			}
			lines[i] = ""
		case strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~"):
			n := len(trim) - len(strings.TrimLeft(trim, trim[:1]))
			fence = strings.Repeat(trim[:1], n)
			lines[i] = ""
		}
	}
	return lines
}

// stripCodeSpans removes `code spans` (any number of backticks) from line.
func stripCodeSpans(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		if line[i] != '`' {
			b.WriteByte(line[i])
			i++
			continue
		}
		n := 0
		for i+n < len(line) && line[i+n] == '`' {
			n++
		}
		ticks := line[i : i+n]
		end := -1
		for j := i + n; j < len(line); {
			k := strings.Index(line[j:], ticks)
			if k < 0 {
				break
			}
			k += j
			m := 0
			for k+m < len(line) && line[k+m] == '`' {
				m++
			}
			if m == n {
				end = k + n
				break
			}
			j = k + m
		}
		if end < 0 { // no closing run: literal backticks
			b.WriteString(ticks)
			i += n
			continue
		}
		i = end
	}
	return b.String()
}

// headingAnchors returns the anchors GitHub gives md's headings (and any
// <a name|id> it holds).
func headingAnchors(md string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range proseLines(md) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := atxHeading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[2])
		a := s
		if n := seen[s]; n > 0 {
			a = fmt.Sprintf("%s-%d", s, n)
		}
		seen[s]++
		out[a] = true
	}
	return out
}

// slug is GitHub's heading anchor: link syntax reduced to its text, lower
// case, punctuation dropped except '-' and '_', each space a '-'.
func slug(heading string) string {
	heading = mdLink.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Concurrency: the per-cluster lock", "concurrency-the-per-cluster-lock"},
		{"Output with `-o json`", "output-with--o-json"},
		{"6. Data safety", "6-data-safety"},
		{"Tacker's Kubernetes VIM: --vim-info", "tackers-kubernetes-vim---vim-info"},
		{"Clusters not built by kubespray (kubeadm)", "clusters-not-built-by-kubespray-kubeadm"},
		{"The admin kubeconfig (`BED_KUBECONFIG`, `bed kubeconfig`)", "the-admin-kubeconfig-bed_kubeconfig-bed-kubeconfig"},
		{"See [the role](roles/x/README.md)", "see-the-role"},
	} {
		if got := slug(c.in); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	a := headingAnchors("# A\n## A\n```\n# not a heading\n```\n## A\n")
	want := []string{"a", "a-1", "a-2"}
	var got []string
	for k := range a {
		got = append(got, k)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("anchors = %v, want %v", got, want)
	}
}

func TestRelativeLinks(t *testing.T) {
	md := "see [a](a.md) and `[b](b.md)` and [c](https://x/c.md)\n```\n[d](d.md)\n```\n[e]: e.md#x\n![f](f.svg \"title\")\n"
	var got []string
	for _, l := range relativeLinks(md) {
		got = append(got, fmt.Sprintf("%d:%s", l.line, l.dest))
	}
	want := []string{"1:a.md", "5:e.md#x", "6:f.svg"}
	if !slices.Equal(got, want) {
		t.Errorf("links = %v, want %v", got, want)
	}
}
