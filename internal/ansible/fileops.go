package ansible

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/heatsible/heatsible/internal/remote"
)

// FileOps are file operations on the machine where ansible-playbook runs
// (this one, or the Ansible host): the inventory heatsible hands to kubespray
// lives there, outside any run bundle.
type FileOps interface {
	// PutFile writes data to the absolute path p (parents created 0755),
	// replacing it atomically.
	PutFile(ctx context.Context, p string, data []byte, perm fs.FileMode) error
	// RemoveFile removes the file p; a missing file is no error. With
	// dirIfEmpty, p's directory is removed too when that leaves it empty.
	RemoveFile(ctx context.Context, p string, dirIfEmpty bool) error
	// IsDir reports whether p exists (exists) and is a directory (dir).
	Stat(ctx context.Context, p string) (exists, dir bool, err error)
	// Where names the machine, for messages.
	Where() string
}

func checkAbs(p string) error {
	if !path.IsAbs(p) || path.Clean(p) != p || strings.Count(p, "/") < 2 {
		return fmt.Errorf("%q: want a clean absolute path below a top-level directory", p)
	}
	return nil
}

// PutFile implements FileOps.
func (LocalRunner) PutFile(_ context.Context, p string, data []byte, perm fs.FileMode) error {
	if err := checkAbs(p); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return WriteFileAtomic(p, data, perm)
}

// WriteFileAtomic writes data to p through a temporary file created
// exclusively (O_EXCL, a random name: it never follows a link someone
// planted, and cannot be guessed) in p's directory, then renamed over p
// (which replaces a link at p instead of writing through it). A crash
// never leaves half a file at p.
func WriteFileAtomic(p string, data []byte, perm fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".heatsible-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// RemoveFile implements FileOps.
func (LocalRunner) RemoveFile(_ context.Context, p string, dirIfEmpty bool) error {
	if err := checkAbs(p); err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if dirIfEmpty {
		// Fails, harmlessly, when something else is in there.
		_ = os.Remove(filepath.Dir(p))
	}
	return nil
}

// Stat implements FileOps.
func (LocalRunner) Stat(_ context.Context, p string) (bool, bool, error) {
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	return true, st.IsDir(), nil
}

// Where implements FileOps.
func (LocalRunner) Where() string { return "this machine" }

// PutFile implements FileOps.
func (rr *RemoteRunner) PutFile(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	if err := checkAbs(p); err != nil {
		return err
	}
	c := rr.Client
	if _, err := c.Output(ctx, "mkdir -p -- "+remote.ShellQuote(path.Dir(p))); err != nil {
		return fmt.Errorf("creating %s on %s: %w", path.Dir(p), c.Address(), err)
	}
	// A random name, created exclusively (SFTP's EXCL: never through a
	// planted link), then renamed over p; -T (GNU mv: Debian and Ubuntu
	// Ansible hosts) so that a link at p to a directory is replaced, not
	// moved into.
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := path.Join(path.Dir(p), "."+path.Base(p)+".heatsible-"+hex.EncodeToString(rnd[:]))
	if err := c.CreateFile(ctx, tmp, data, perm); err != nil {
		return err
	}
	if _, err := c.Output(ctx, "mv -f -T -- "+remote.ShellQuote(tmp)+" "+remote.ShellQuote(p)); err != nil {
		_, _ = c.Output(ctx, "rm -f -- "+remote.ShellQuote(tmp))
		return fmt.Errorf("writing %s on %s: %w", p, c.Address(), err)
	}
	return nil
}

// RemoveFile implements FileOps.
func (rr *RemoteRunner) RemoveFile(ctx context.Context, p string, dirIfEmpty bool) error {
	if err := checkAbs(p); err != nil {
		return err
	}
	cmd := "rm -f -- " + remote.ShellQuote(p)
	if dirIfEmpty {
		cmd += "; rmdir -- " + remote.ShellQuote(path.Dir(p)) + " 2>/dev/null; true"
	}
	if _, err := rr.Client.Output(ctx, cmd); err != nil {
		return fmt.Errorf("removing %s on %s: %w", p, rr.Client.Address(), err)
	}
	return nil
}

// Stat implements FileOps.
func (rr *RemoteRunner) Stat(ctx context.Context, p string) (bool, bool, error) {
	q := remote.ShellQuote(p)
	out, err := rr.Client.Output(ctx, "if [ -d "+q+" ]; then echo dir; elif [ -e "+q+" ]; then echo file; else echo none; fi")
	if err != nil {
		return false, false, fmt.Errorf("looking at %s on %s: %w", p, rr.Client.Address(), err)
	}
	switch strings.TrimSpace(out) {
	case "dir":
		return true, true, nil
	case "file":
		return true, false, nil
	}
	return false, false, nil
}

// Where implements FileOps.
func (rr *RemoteRunner) Where() string { return "the Ansible host " + rr.Client.Address() }

var (
	_ FileOps = LocalRunner{}
	_ FileOps = (*RemoteRunner)(nil)
)
