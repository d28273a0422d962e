package params

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadPackageFileRoot: package files are read through an os.Root. A
// relative symlink that stays inside the package is followed; one that
// leaves it, an absolute one (even to a file inside the package), a FIFO
// and a directory are refused.
func TestReadPackageFileRoot(t *testing.T) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, "pkg")
	if err := os.MkdirAll(filepath.Join(pkg, "Files"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"Files/f.yaml": "inside\n", "../outside.yaml": "outside\n"} {
		if err := os.WriteFile(filepath.Join(pkg, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"Files/rel.yaml":    "f.yaml",
		"Files/escape.yaml": "../../outside.yaml",
		"Files/abs.yaml":    filepath.Join(pkg, "Files", "f.yaml"),
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(pkg, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(pkg, "Files", "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rel, want, err string
	}{
		{"Files/f.yaml", "inside\n", ""},
		{"./Files/rel.yaml", "inside\n", ""},
		{"Files/escape.yaml", "", "outside the VNF package directory; a symlink may not leave the package"},
		{"Files/abs.yaml", "", "is an absolute symlink (to \"" + filepath.Join(pkg, "Files", "f.yaml") + "\"): package files are read through a root that refuses absolute links; make it relative (ln -sr)"},
		{"Files/missing.yaml", "", "does not exist in the VNF package directory"},
		{"Files/fifo.yaml", "", "is not a regular file"},
		{"Files", "", "is not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			got, err := ReadPackageFile(pkg, tt.rel, 1<<10)
			if tt.err == "" {
				if err != nil || string(got) != tt.want {
					t.Fatalf("ReadPackageFile(%q) = %q, %v; want %q", tt.rel, got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("ReadPackageFile(%q) = %q, %v; want an error with %q", tt.rel, got, err, tt.err)
			}
		})
	}
}
