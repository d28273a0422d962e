package ansible

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestFiles drives both FileOps implementations through the same cases: the
// remote one over a real sshd on loopback, so its results land on this
// machine's file system where the test can look.
func TestFileOps(t *testing.T) {
	rr, _ := remoteRunner(t)
	for name, f := range map[string]FileOps{"local": LocalRunner{}, "remote": rr} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), "kubespray", "inventory", "k8s")
			p := filepath.Join(dir, "hosts.yaml")
			if ex, _, err := f.Stat(ctx, dir); err != nil || ex {
				t.Fatalf("Stat(missing) = %v, %v", ex, err)
			}
			for _, content := range []string{"first\n", "second\n"} {
				if err := f.PutFile(ctx, p, []byte(content), 0o640); err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(p)
				if err != nil || string(got) != content {
					t.Fatalf("after PutFile: %q, %v; want %q", got, err, content)
				}
				st, _ := os.Stat(p)
				if st.Mode().Perm() != 0o640 {
					t.Errorf("mode %v, want 0640", st.Mode().Perm())
				}
			}
			if _, err := os.Stat(p + ".heatsible-tmp"); !os.IsNotExist(err) {
				t.Errorf("temporary file left behind: %v", err)
			}
			if ex, isDir, err := f.Stat(ctx, dir); err != nil || !ex || !isDir {
				t.Errorf("Stat(dir) = %v %v %v", ex, isDir, err)
			}
			if ex, isDir, err := f.Stat(ctx, p); err != nil || !ex || isDir {
				t.Errorf("Stat(file) = %v %v %v", ex, isDir, err)
			}
			// A foreign file keeps the directory.
			other := filepath.Join(dir, "group_vars.yml")
			if err := os.WriteFile(other, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := f.RemoveFile(ctx, p, true); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("file still there: %v", err)
			}
			if _, err := os.Stat(other); err != nil {
				t.Errorf("RemoveFile removed the operator's file: %v", err)
			}
			os.Remove(other)
			f.PutFile(ctx, p, []byte("x"), 0o600)
			if err := f.RemoveFile(ctx, p, true); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("empty directory kept: %v", err)
			}
			if err := f.RemoveFile(ctx, p, true); err != nil {
				t.Errorf("removing a missing file: %v", err)
			}
			for _, bad := range []string{"relative/hosts.yaml", "/hosts.yaml", "/a/../b/hosts.yaml"} {
				if err := f.PutFile(ctx, bad, nil, 0o600); err == nil {
					t.Errorf("PutFile(%q) accepted", bad)
				}
				if err := f.RemoveFile(ctx, bad, false); err == nil {
					t.Errorf("RemoveFile(%q) accepted", bad)
				}
			}
		})
	}
}

// TestPutFileNeverFollowsAPlantedLink: someone who can write in the
// inventory's directory plants symlinks where a temporary file (the old
// fixed name p.heatsible-tmp) or the file itself would be, pointing at a
// file of theirs to have heatsible overwrite it. PutFile creates its
// temporary file exclusively (O_EXCL, a random name) in the target's
// directory and renames it over the target: the victim keeps its content,
// the target is a regular file, and nothing is left behind. On b6df54c
// both runners wrote the inventory into the victim through the link.
func TestPutFileNeverFollowsAPlantedLink(t *testing.T) {
	rr, _ := remoteRunner(t)
	for name, f := range map[string]FileOps{"local": LocalRunner{}, "remote": rr} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			base := t.TempDir()
			victim := filepath.Join(base, "victim")
			dir := filepath.Join(base, "inventory")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "hosts.yaml")
			for _, link := range []string{p + ".heatsible-tmp", p + ".tmp", p} {
				if err := os.WriteFile(victim, []byte("victim\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				os.Remove(p)
				if err := os.Symlink(victim, link); err != nil {
					t.Fatal(err)
				}
				if err := f.PutFile(ctx, p, []byte("inventory\n"), 0o600); err != nil {
					t.Fatalf("PutFile with a link at %s: %v", filepath.Base(link), err)
				}
				if got, _ := os.ReadFile(victim); string(got) != "victim\n" {
					t.Errorf("link at %s: the victim now holds %q", filepath.Base(link), got)
				}
				st, err := os.Lstat(p)
				if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
					t.Errorf("link at %s: the target is %v (%v); want a regular 0600 file", filepath.Base(link), st, err)
				}
				if got, _ := os.ReadFile(p); string(got) != "inventory\n" {
					t.Errorf("link at %s: the target holds %q", filepath.Base(link), got)
				}
				os.Remove(link)
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if e.Name() != "hosts.yaml" {
					t.Errorf("left behind: %s", e.Name())
				}
			}
		})
	}
}
