package params

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/heatsible/heatsible/internal/manifest"
)

// packageFile resolves rel inside the package directory, following symlinks,
// and refuses anything that ends up outside it or is not a regular file.
func packageFile(pkgDir, rel string) (string, error) {
	root, err := filepath.EvalSymlinks(pkgDir)
	if err != nil {
		return "", fmt.Errorf("the VNF package directory %q cannot be read: %v", pkgDir, err)
	}
	p, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return "", fmt.Errorf("%q does not exist in the VNF package directory %s", rel, pkgDir)
	}
	if r, err := filepath.Rel(root, p); err != nil || r == ".." || strings.HasPrefix(r, "../") {
		return "", fmt.Errorf("%q resolves to %s, outside the VNF package directory; a symlink may not leave the package", rel, p)
	}
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%q: %v", rel, err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%q is not a regular file", rel)
	}
	return p, nil
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
		return nil, fmt.Errorf("manifest %q %v", rel, err)
	}
	return pv, nil
}

// readPackageFile reads rel inside the package directory, at most max+1
// bytes (the caller judges the size).
func readPackageFile(pkgDir, rel string, max int64) ([]byte, error) {
	p, err := packageFile(pkgDir, rel)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", rel, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%q: %v", rel, err)
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
		return nil, fmt.Errorf("%q is larger than %d bytes", rel, max)
	}
	return data, nil
}
