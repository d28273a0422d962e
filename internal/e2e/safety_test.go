package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/topology"
)

// volumeFacts is what a format would change: the file system's UUID and
// creation time (from its superblock) and a file's inode and content.
type volumeFacts struct {
	UUID, Created, Inode, Content string
}

// facts reads them on the storage host for the file system mounted at
// mount and file on it.
func (b *bed) facts(t *testing.T, mount, file string) volumeFacts {
	t.Helper()
	out := b.exec(t, "storage", "sh", "-c", `set -e
src=$(findmnt -n -o SOURCE --mountpoint "$1")
blkid -p -o value -s UUID "$src"
dumpe2fs -h "$src" 2>/dev/null | sed -n 's/^Filesystem created: *//p'
stat -c %i "$2"`, "sh", mount, file)
	f := strings.Split(strings.TrimSpace(out), "\n")
	if len(f) != 3 {
		t.Fatalf("facts of %s on storage: %q", mount, out)
	}
	return volumeFacts{UUID: f[0], Created: f[1], Inode: f[2], Content: b.exec(t, "storage", "cat", file)}
}

// nfsRead reads url with libnfs from a worker: the way a pod's data is read.
func (b *bed) nfsRead(t *testing.T, url string) string {
	t.Helper()
	out, err := b.try("worker-0", "nfs-cat", url)
	if err != nil {
		t.Errorf("nfs-cat %s on worker-0: %v %s", url, err, out)
	}
	return out
}

// TestDataSurvives: a file written through NFS is still there, on the same
// never-reformatted file system (same UUID, same creation time, same inode),
// and readable through NFS, after (a) a re-run of instantiate-end, (b)
// heal-end of the whole cluster with the same volume, (c) a simulated
// reboot of the storage host (ganesha stopped, the volume unmounted) and a
// re-run of its roles, which mount the volume again from fstab.
func TestDataSurvives(t *testing.T) {
	b := needBed(t)
	k := b.request(t).AdditionalParams.K
	mount, dir := k.Storage.Volumes[0].MountTo, k.Storage.Exports[0].Dir
	if _, err := b.try("worker-0", "nfs-ls", "nfs://10.231.0.11"+dir); err != nil {
		// A bed nothing ran on yet: set it up first.
		if code, _, errs, _ := b.heatsible(t, b.runArgs()...); code != 0 {
			t.Fatalf("instantiate-end to set the bed up: exit %d\n%s", code, tail(errs, 30))
		}
	}
	nonce := fmt.Sprintf("safety-%d", time.Now().UnixNano())
	url := "nfs://10.231.0.11" + dir + "/" + nonce + ".txt"
	b.exec(t, "worker-0", "sh", "-c", fmt.Sprintf("printf %s > /tmp/%s.txt && nfs-cp /tmp/%s.txt %s", nonce, nonce, nonce, url))
	before := b.facts(t, mount, dir+"/"+nonce+".txt")
	if before.Content != nonce || before.UUID == "" || before.Created == "" {
		t.Fatalf("after writing through NFS: %+v, want content %q", before, nonce)
	}
	fstab := b.exec(t, "storage", "cat", "/etc/fstab")

	check := func(t *testing.T, what string) {
		t.Helper()
		if after := b.facts(t, mount, dir+"/"+nonce+".txt"); after != before {
			t.Errorf("after %s: %+v, want %+v (reformatted or replaced?)", what, after, before)
		}
		if got := b.nfsRead(t, url); got != nonce {
			t.Errorf("after %s: read %q through NFS, want %q", what, got, nonce)
		}
		if got := b.exec(t, "storage", "cat", "/etc/fstab"); got != fstab {
			t.Errorf("after %s: /etc/fstab changed:\nbefore:\n%s\nafter:\n%s", what, fstab, got)
		}
	}
	steps := []struct {
		name   string
		before func(t *testing.T)
		args   []string
	}{
		{name: "re-run of instantiate-end", args: b.runArgs()},
		{name: "heal-end of the whole cluster", args: b.opArgs("heal-end", "--cluster")},
		{
			name: "reboot of the storage host",
			before: func(t *testing.T) {
				t.Cleanup(func() { // whatever the run did: mounted and serving
					for _, v := range k.Storage.Volumes {
						if _, err := b.try("storage", "findmnt", "--mountpoint", v.MountTo); err != nil {
							b.try("storage", "mount", v.MountTo)
						}
					}
					b.try("storage", "systemctl", "start", "nfs-ganesha")
				})
				b.exec(t, "storage", "systemctl", "stop", "nfs-ganesha")
				for _, v := range k.Storage.Volumes {
					b.exec(t, "storage", "umount", v.MountTo)
				}
				if out, err := b.try("storage", "findmnt", "--mountpoint", mount); err == nil {
					t.Fatalf("%s is still mounted:\n%s", mount, out)
				}
			},
			// the storage host's roles: the rest of the cluster did not reboot
			args: b.runArgs("--tags", "cinder_volume,nfs_server"),
		},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.before != nil {
				s.before(t)
			}
			code, out, errs, took := b.heatsible(t, s.args...)
			t.Logf("%s: exit %d in %s", s.name, code, took.Round(time.Millisecond))
			if code != 0 {
				t.Fatalf("%s: exit %d\n%s", s.name, code, tail(errs, 40))
			}
			parseRun(t, out)
			check(t, s.name)
		})
	}
}

// byIDLink makes /dev/disk/by-id/virtio-<id[:20]> point at dev on the
// storage host, as udev does for a virtio disk whose serial is the volume
// id; the test's cleanup removes it.
func (b *bed) byIDLink(t *testing.T, id, dev string) string {
	t.Helper()
	link := "/dev/disk/by-id/virtio-" + id[:20]
	t.Cleanup(func() { b.try("storage", "rm", "-f", link) })
	b.exec(t, "storage", "sh", "-c", `mkdir -p /dev/disk/by-id && ln -sfn "../../${2#/dev/}" "$1"`, "sh", link, dev)
	return link
}

// keepState puts heatsible's record of the volumes on the storage host
// (roles/cinder_volume, /var/lib/heatsible/volumes.json) back as it was
// when the test ends: the scratch volumes of a test must not stay in it.
func (b *bed) keepState(t *testing.T) {
	t.Helper()
	const f = "/var/lib/heatsible/volumes.json"
	before, err := b.try("storage", "cat", f)
	t.Cleanup(func() {
		if err != nil {
			b.try("storage", "rm", "-f", f)
			return
		}
		b.try("storage", "sh", "-c", `printf '%s' "$1" > "$2"`, "sh", before, f)
	})
}

// scratchDevice makes a 64 MiB loop device on this machine and shows it
// on the storage host as /dev/hs-foreign (as the bed does with its
// volumes); the test's cleanup removes both.
func (b *bed) scratchDevice(t *testing.T) string {
	t.Helper()
	return b.scratchDeviceNamed(t, "/dev/hs-foreign", 64)
}

// scratchDeviceNamed is scratchDevice with another node name and size.
func (b *bed) scratchDeviceNamed(t *testing.T, dev string, mb int64) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "scratch.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, mb<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "-f", "--show", img).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v %s", err, out)
	}
	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", loop).Run() })
	var st struct{ maj, min uint32 }
	if out, err := exec.Command("stat", "-c", "%t %T", loop).Output(); err != nil {
		t.Fatal(err)
	} else if _, err := fmt.Sscanf(string(out), "%x %x", &st.maj, &st.min); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.try("storage", "rm", "-f", dev) })
	b.exec(t, "storage", "sh", "-c", fmt.Sprintf("rm -f %s && mknod -m 660 %s b %d %d && chgrp disk %s", dev, dev, st.maj, st.min, dev))
	return dev
}

// withVolume returns the arguments of an instantiate-end run of the
// cinder_volume role whose topology and request are the bed's plus one
// volume: id, Heat device name dev, mounted at mount; edit may change the
// request's storage_server further.
func (b *bed) withVolume(t *testing.T, id, dev, mount string, edit func(ss map[string]any)) []string {
	t.Helper()
	topo, err := topology.Load(filepath.Join(b.dir, "topology.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res := "scratch_volume_" + id[:8]
	topo.Volumes = append(topo.Volumes, topology.Volume{Resource: res, ID: id, Device: dev})
	topoFile := filepath.Join(t.TempDir(), "topology.yaml")
	if err := topo.Save(topoFile); err != nil {
		t.Fatal(err)
	}
	req := b.requestDoc(t)
	ss := req["additionalParams"].(map[string]any)["k8s_cluster_installation_param"].(map[string]any)["storage_server"].(map[string]any)
	ss["cinder_volume_setup_params"] = append(ss["cinder_volume_setup_params"].([]any), map[string]any{"volume_resource_id": res, "mount_to": mount})
	if edit != nil {
		edit(ss)
	}
	args := b.runArgs("--tags", "cinder_volume")
	args = setFlag(args, "--request", writeRequest(t, req))
	return setFlag(dropFlag(args, "--stack"), "--topology", topoFile)
}

// cleanMount unmounts mount on the storage host at the test's end,
// removes the directory and its fstab line, and checks that /etc/fstab is
// as it was.
func (b *bed) cleanMount(t *testing.T, mount string) {
	t.Helper()
	fstab := b.exec(t, "storage", "cat", "/etc/fstab")
	t.Cleanup(func() {
		b.try("storage", "sh", "-c", `while findmnt --mountpoint "$1" >/dev/null; do umount "$1" || break; done; rmdir "$1"; sed -i "\#[[:space:]]$1[[:space:]]#d" /etc/fstab`, "sh", mount)
		if got, _ := b.try("storage", "cat", "/etc/fstab"); got != fstab {
			t.Errorf("/etc/fstab not restored:\n%s", got)
		}
	})
}

// TestForeignFilesystemNeverFormatted: a volume whose device already holds
// something is never formatted. A file system (ext4 with a label and data)
// is mounted as it is; a signature that is not a mountable file system
// (swap, a partition table) makes cinder_volume refuse (exit 6, refused for
// safety) with a message naming the device, and leaves it untouched.
func TestForeignFilesystemNeverFormatted(t *testing.T) {
	b := needBed(t)
	dev := b.scratchDevice(t)
	const mount = "/scratch"
	fstab := b.exec(t, "storage", "cat", "/etc/fstab")
	t.Cleanup(func() {
		b.try("storage", "sh", "-c", "umount "+mount+"; rmdir "+mount+"; sed -i '\\#[[:space:]]"+mount+"[[:space:]]#d' /etc/fstab")
		if got, _ := b.try("storage", "cat", "/etc/fstab"); got != fstab {
			t.Errorf("/etc/fstab not restored:\n%s", got)
		}
	})

	// The bed's topology and request plus one volume: the scratch device.
	topo, err := topology.Load(filepath.Join(b.dir, "topology.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	volID := fmt.Sprintf("f0e1d2c3-0000-4000-8000-%012d", time.Now().Unix())
	// The volume's by-id name, as udev makes it from the disk serial Nova
	// sets: a disk known only by its device name is never formatted nor
	// mounted without a record (TestVolumeIdentity), which is not what
	// this test is about.
	b.byIDLink(t, volID, dev)
	b.keepState(t)
	topo.Volumes = append(topo.Volumes, topology.Volume{Resource: "scratch_volume", ID: volID, Device: dev})
	topoFile := filepath.Join(t.TempDir(), "topology.yaml")
	if err := topo.Save(topoFile); err != nil {
		t.Fatal(err)
	}
	req := b.requestDoc(t)
	ss := req["additionalParams"].(map[string]any)["k8s_cluster_installation_param"].(map[string]any)["storage_server"].(map[string]any)
	ss["cinder_volume_setup_params"] = append(ss["cinder_volume_setup_params"].([]any), map[string]any{"volume_resource_id": "scratch_volume", "mount_to": mount})
	reqFile := writeRequest(t, req)
	args := b.runArgs("--tags", "cinder_volume")
	args = setFlag(args, "--request", reqFile)
	args = setFlag(dropFlag(args, "--stack"), "--topology", topoFile)

	probe := func() string {
		return b.exec(t, "storage", "blkid", "-p", "-o", "export", dev)
	}
	tests := []struct {
		name    string
		make    string // shell on the storage host, $1 = the device
		code    int
		want    []string // in heatsible's stderr
		mounted bool
	}{
		{
			name: "swap", make: `mkswap -L foreign "$1" >/dev/null`, code: 6,
			want: []string{"(" + dev + ", volume " + volID + `) holds "swap"`, "heatsible never formats over an existing signature", "wipefs -n " + dev},
		},
		{
			name: "partition table", code: 6,
			// an MBR with one Linux partition (type 0x83 from sector 2048)
			make: `python3 -c 'import sys,struct
with open(sys.argv[1], "r+b") as f:
    f.seek(446); f.write(struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", 2048, 65536))
    f.seek(510); f.write(b"\x55\xaa")' "$1"`,
			want: []string{"(" + dev + ", volume " + volID + ") holds a signature that is not a file system (a partition table?)"},
		},
		{
			name: "ext4 with a label and data", code: 0, mounted: true,
			make: `mkfs.ext4 -q -L foreign "$1" && mkdir -p /run/hs-foreign && mount "$1" /run/hs-foreign &&
printf keep > /run/hs-foreign/keep.txt && umount /run/hs-foreign && rmdir /run/hs-foreign`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b.exec(t, "storage", "sh", "-c", `wipefs -a -q "$1" && dd if=/dev/zero of="$1" bs=1M count=4 conv=fsync status=none && `+tt.make, "sh", dev)
			sig := probe()
			code, _, errs, took := b.heatsible(t, args...)
			t.Logf("%s: exit %d in %s\n%s", tt.name, code, took.Round(time.Millisecond), errorOf(errs))
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", code, tt.code, tail(errs, 30))
			}
			for _, w := range tt.want {
				if !strings.Contains(errs, w) {
					t.Errorf("the error does not say %q:\n%s", w, tail(errs, 10))
				}
			}
			if got := probe(); got != sig {
				t.Errorf("the device's signature changed:\nbefore:\n%s\nafter:\n%s", sig, got)
			}
			_, err := b.try("storage", "findmnt", "--mountpoint", mount)
			if mounted := err == nil; mounted != tt.mounted {
				t.Errorf("%s mounted: %v, want %v", mount, mounted, tt.mounted)
			}
			if tt.mounted {
				if got := b.exec(t, "storage", "cat", mount+"/keep.txt"); got != "keep" {
					t.Errorf("%s/keep.txt: %q, want the data written before", mount, got)
				}
				b.exec(t, "storage", "umount", mount)
			}
		})
	}
}
