// Package collection holds heatsible's Ansible collection, heatsible.nfv:
// the modules, action plugins and filters that heatsible's roles (package
// roles) use by their fully qualified names, one copy of each, embedded so
// that a run bundle can carry it to whichever machine runs ansible-playbook.
package collection

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Namespace and Name make the collection's fully qualified name, the prefix
// of every plugin the roles use (heatsible.nfv.refuse).
const (
	Namespace = "heatsible"
	Name      = "nfv"
	FQCN      = Namespace + "." + Name
)

// FS holds the collection's tree at its root (galaxy.yml, meta/, plugins/),
// without its Python tests (tests/, run by make role-tests and ansible-test
// units) and without names starting with "." or "_" (no __pycache__): it is
// laid as ansible_collections/heatsible/nfv on a collections path.
//
//go:embed galaxy.yml README.md meta plugins
var FS embed.FS

// Lay writes the collection under root as a collections path wants it
// (root/ansible_collections/heatsible/nfv/...) and returns root, for
// running ansible-playbook or ansible-lint with ANSIBLE_COLLECTIONS_PATH
// outside a run bundle (tests). Files already there are overwritten.
func Lay(root string) (string, error) {
	dst := filepath.Join(root, "ansible_collections", Namespace, Name)
	err := fs.WalkDir(FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := fs.ReadFile(FS, p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("laying the collection %s in %s: %w", FQCN, root, err)
	}
	return root, nil
}
