package params

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/heatsible/heatsible/internal/manifest"
)

// openPackageFile opens rel inside the package directory through an
// os.Root, which follows symlinks only while they stay inside the package,
// and refuses anything that is not a regular file (checked before it is
// opened: a FIFO would block). The diagnosis of a refusal (escapes, does not
// exist) only words the error; os.Root does the refusing.
func openPackageFile(pkgDir, rel string) (*os.File, error) {
	root, err := os.OpenRoot(pkgDir)
	if err != nil {
		return nil, fmt.Errorf("the VNF package directory %q cannot be read: %v", pkgDir, err)
	}
	defer root.Close()
	name := filepath.FromSlash(rel)
	st, err := root.Stat(name)
	if err != nil {
		return nil, packageFileError(pkgDir, rel, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", quote(rel))
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, packageFileError(pkgDir, rel, err)
	}
	return f, nil
}

// packageFileError says why the package's root refused rel: it does not
// exist, or it resolves outside the package (a symlink or ".." leaving it).
func packageFileError(pkgDir, rel string, err error) error {
	dir, derr := filepath.EvalSymlinks(pkgDir)
	if derr != nil {
		return fmt.Errorf("the VNF package directory %q cannot be read: %v", pkgDir, derr)
	}
	// An absolute symlink on the way: os.Root refuses it even when it
	// points inside the package.
	at := dir
	for _, part := range strings.Split(filepath.FromSlash(rel), string(filepath.Separator)) {
		at = filepath.Join(at, part)
		if target, lerr := os.Readlink(at); lerr == nil && filepath.IsAbs(target) {
			r, _ := filepath.Rel(dir, at)
			return fmt.Errorf("%s is an absolute symlink (to %s): package files are read through a root that refuses absolute links; make it relative (ln -sr)", quote(filepath.ToSlash(r)), quote(target))
		}
	}
	p, perr := filepath.EvalSymlinks(filepath.Join(dir, filepath.FromSlash(rel)))
	if perr != nil {
		return fmt.Errorf("%s does not exist in the VNF package directory %s", quote(rel), pkgDir)
	}
	if r, rerr := filepath.Rel(dir, p); rerr != nil || r == ".." || strings.HasPrefix(r, "../") {
		return fmt.Errorf("%s resolves to %s, outside the VNF package directory; a symlink may not leave the package", quote(rel), p)
	}
	return fmt.Errorf("%s: %v", quote(rel), err)
}

// ReadManifest reads and checks the PersistentVolume manifest at rel inside
// the package directory.
func ReadManifest(pkgDir, rel string) (*manifest.PV, error) {
	data, err := readPackageFile(pkgDir, rel, manifest.MaxSize)
	if err != nil {
		return nil, err
	}
	pv, err := manifest.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("manifest %s %v", quote(rel), err)
	}
	return pv, nil
}

// readPackageFile reads rel inside the package directory, at most max+1
// bytes (the caller judges the size).
func readPackageFile(pkgDir, rel string, max int64) ([]byte, error) {
	f, err := openPackageFile(pkgDir, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", quote(rel), err)
	}
	return data, nil
}

// MaxScriptSize bounds a script read from the package (e.g. the external
// load balancer's script_path).
const MaxScriptSize = 1 << 20

// ReadPackageFile reads the file at rel (a leading "./" is allowed) inside
// the package directory, at most max bytes.
func ReadPackageFile(pkgDir, rel string, max int64) ([]byte, error) {
	rel = strings.TrimPrefix(rel, "./")
	data, err := readPackageFile(pkgDir, rel, max)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", quote(rel), max)
	}
	return data, nil
}
