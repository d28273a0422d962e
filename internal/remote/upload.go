package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/pkg/sftp"
	"golang.org/x/sync/errgroup"
)

// Upload copies the tree localDir into remoteDir over SFTP, keeping file
// and directory permission bits (a 0600 secrets file stays 0600). remoteDir
// is created if needed and always ends up 0700, and it is made 0700 before
// anything is written into it, so no file is ever readable by others, not
// even between its creation and its chmod.
//
// Symlinks are recreated as relative symlinks when they point inside
// localDir and rejected when they point outside it (a bundle must never
// carry, say, /etc/shadow by accident). Other special files are rejected.
func (c *Client) Upload(ctx context.Context, localDir, remoteDir string) error {
	root, err := filepath.Abs(localDir)
	if err != nil {
		return fmt.Errorf("uploading %s: %w", localDir, err)
	}
	if root, err = filepath.EvalSymlinks(root); err != nil {
		return fmt.Errorf("uploading %s: %w", localDir, err)
	}
	if !path.IsAbs(remoteDir) {
		return fmt.Errorf("uploading to %s:%s: want an absolute remote directory", c.addr, remoteDir)
	}
	// Check the whole tree before sending anything.
	if err := checkTree(root); err != nil {
		return fmt.Errorf("uploading %s: %w", localDir, err)
	}

	sc, err := c.sftpClient()
	if err != nil {
		return err
	}
	defer sc.Close()
	// Cut the transfer when ctx ends; sftp calls have no context.
	stop := context.AfterFunc(ctx, func() { _ = sc.Close() })
	defer stop()

	wrap := func(what string, err error) error {
		if ctx.Err() != nil {
			return fmt.Errorf("uploading to %s:%s cancelled: %w", c.addr, remoteDir, ctx.Err())
		}
		return fmt.Errorf("uploading to %s:%s: %s: %w", c.addr, remoteDir, what, err)
	}

	if err := sc.MkdirAll(remoteDir); err != nil {
		return wrap("creating directory", err)
	}
	if err := sc.Chmod(remoteDir, 0o700); err != nil {
		return wrap("chmod 0700", err)
	}

	// Directories and symlinks are made in the walk's order (a parent
	// before its children); files are copied uploadWorkers at a time once
	// their directory is there: each file costs four round trips (open,
	// chmod, write, close), and a run bundle has a hundred of them.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(uploadWorkers)
	werr := filepath.WalkDir(root, func(p string, d fs.DirEntry, werr error) error {
		if werr != nil {
			return werr
		}
		if err := gctx.Err(); err != nil {
			if ctx.Err() != nil {
				return wrap("walking", err)
			}
			return nil // a copy failed: g.Wait says which
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		dst := path.Join(remoteDir, filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode()
		switch {
		case mode.IsDir():
			if err := sc.Mkdir(dst); err != nil {
				if st, serr := sc.Lstat(dst); serr != nil || !st.IsDir() {
					return wrap("creating directory "+rel, err)
				}
			}
			if err := sc.Chmod(dst, mode.Perm()); err != nil {
				return wrap("chmod "+rel, err)
			}
		case mode&fs.ModeSymlink != 0:
			target, err := symlinkInside(root, p)
			if err != nil {
				return err
			}
			_ = sc.Remove(dst)
			if err := sc.Symlink(target, dst); err != nil {
				return wrap("creating symlink "+rel, err)
			}
		case mode.IsRegular():
			g.Go(func() error {
				if err := uploadFile(sc, p, dst, mode.Perm()); err != nil {
					return wrap("copying "+rel, err)
				}
				return nil
			})
		default:
			return fmt.Errorf("uploading %s: %s is not a regular file, directory or symlink", localDir, rel)
		}
		return nil
	})
	// Every copy has ended before sc is closed, also when the walk failed.
	if err := g.Wait(); err != nil {
		return err
	}
	return werr
}

// uploadWorkers is how many files Upload copies at once over its one SFTP
// session.
const uploadWorkers = 8

// uploadFile creates dst, narrows its mode BEFORE writing the content, then
// copies.
func uploadFile(sc *sftp.Client, src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := sc.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return err
	}
	if err := out.Chmod(perm); err != nil {
		_ = out.Close()
		return err
	}
	if _, err := out.ReadFrom(in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// checkTree rejects symlinks that leave root and special files.
func checkTree(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		t := d.Type()
		switch {
		case t&fs.ModeSymlink != 0:
			_, err := symlinkInside(root, p)
			return err
		case t.IsDir(), t.IsRegular():
			return nil
		default:
			rel, _ := filepath.Rel(root, p)
			return fmt.Errorf("%s is not a regular file, directory or symlink", rel)
		}
	})
}

// symlinkInside returns the link's target relative to the link's directory
// if the fully resolved target stays inside root.
func symlinkInside(root, link string) (string, error) {
	rel, _ := filepath.Rel(root, link)
	resolved, err := filepath.EvalSymlinks(link)
	if err != nil {
		return "", fmt.Errorf("symlink %s: %w", rel, err)
	}
	within, err := filepath.Rel(root, resolved)
	if err != nil || within == ".." || strings.HasPrefix(within, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("symlink %s points outside the upload directory (to %s)", rel, resolved)
	}
	target, err := filepath.Rel(filepath.Dir(link), resolved)
	if err != nil {
		return "", fmt.Errorf("symlink %s: %w", rel, err)
	}
	return filepath.ToSlash(target), nil
}

// WriteFile writes data to the remote file p (created or truncated) with
// permissions perm, set before the content is written.
func (c *Client) WriteFile(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	sc, err := c.sftpClient()
	if err != nil {
		return err
	}
	defer sc.Close()
	stop := context.AfterFunc(ctx, func() { _ = sc.Close() })
	defer stop()
	f, err := sc.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err == nil {
		err = f.Chmod(perm)
		if err == nil {
			_, err = f.Write(data)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("writing %s:%s: %w", c.addr, p, err)
	}
	return nil
}

// CreateFile writes data to the new remote file p over SFTP, mode perm.
// It fails when p exists, even as a symlink (SFTP's EXCL, open(2)'s
// O_EXCL): a temporary file named at random this way is never one someone
// planted.
func (c *Client) CreateFile(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	sc, err := c.sftpClient()
	if err != nil {
		return err
	}
	defer sc.Close()
	stop := context.AfterFunc(ctx, func() { _ = sc.Close() })
	defer stop()
	f, err := sc.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err == nil {
		err = f.Chmod(perm)
		if err == nil {
			_, err = f.Write(data)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("writing %s:%s: %w", c.addr, p, err)
	}
	return nil
}

// ReadFile reads the remote file p over SFTP, at most limit bytes (a larger
// file is an error). A missing file returns (nil, false, nil).
func (c *Client) ReadFile(ctx context.Context, p string, limit int64) ([]byte, bool, error) {
	sc, err := c.sftpClient()
	if err != nil {
		return nil, false, err
	}
	defer sc.Close()
	stop := context.AfterFunc(ctx, func() { _ = sc.Close() })
	defer stop()
	f, err := sc.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, false, fmt.Errorf("reading %s:%s: %w", c.addr, p, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, false, fmt.Errorf("reading %s:%s: %w", c.addr, p, err)
	}
	if int64(len(data)) > limit {
		return nil, false, fmt.Errorf("reading %s:%s: larger than %d bytes", c.addr, p, limit)
	}
	return data, true, nil
}
