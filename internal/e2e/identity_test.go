package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestVolumeIdentity: the storage server touches a disk only when it is
// provably the volume (roles/cinder_volume/README.md, "Which disk is the
// volume"). Each case adds a scratch volume to the bed's request and runs
// cinder_volume:
//
//   - a blank volume whose by-id link is missing (Heat's device name is
//     all there is): refused with exit 6, the device still blank; with the
//     request's opt-in (volume_identification: device_name) it is formatted
//     and mounted; afterwards, without the opt-in, it is mounted again
//     because its file system was recorded;
//   - a block copy of the bed's volume (same file-system UUID): refused,
//     nothing mounted twice;
//   - another device already mounted on the volume's mount_to: refused,
//     the volume not formatted, the other device still mounted;
//   - a blank volume known by its virtio-scsi name only (Heat's device name
//     wrong): formatted and mounted.
func TestVolumeIdentity(t *testing.T) {
	b := needBed(t)
	b.keepState(t)
	nonce := time.Now().Unix()

	t.Run("blank volume without by-id link", func(t *testing.T) {
		const mount = "/scratch-blank"
		dev := b.scratchDeviceNamed(t, "/dev/hs-blank", 64)
		b.cleanMount(t, mount)
		id := fmt.Sprintf("b1a4c0de-0000-4000-8000-%012d", nonce)
		args := b.withVolume(t, id, dev, mount, nil)

		code, _, errs, took := b.heatsible(t, args...)
		msg := errorOf(errs)
		t.Logf("no by-id link, blank: exit %d in %s\n%s", code, took.Round(time.Millisecond), msg)
		if code != 6 {
			t.Fatalf("exit %d, want 6 (refused)\n%s", code, tail(errs, 30))
		}
		for _, w := range []string{
			"volume " + id + " (mount_to " + mount + ") is known only by Heat's device name " + dev + ", which holds nothing",
			"heatsible neither formats nor mounts it", `set storage_server.volume_identification to "device_name" in the request`,
			"Looked for /dev/disk/by-id/virtio-" + id[:20] + " and ata-QEMU_HARDDISK_<id>, scsi-0QEMU_QEMU_HARDDISK_<id>",
		} {
			if !strings.Contains(msg, w) {
				t.Errorf("the refusal does not say %q", w)
			}
		}
		if out, err := b.try("storage", "blkid", "-p", dev); err == nil {
			t.Errorf("%s is no longer blank: %s", dev, out)
		}
		if _, err := b.try("storage", "findmnt", "--mountpoint", mount); err == nil {
			t.Errorf("%s is mounted", mount)
		}

		// The opt-in for platforms whose disks carry no serial.
		optIn := b.withVolume(t, id, dev, mount, func(ss map[string]any) { ss["volume_identification"] = "device_name" })
		code, _, errs, took = b.heatsible(t, optIn...)
		t.Logf("with volume_identification device_name: exit %d in %s", code, took.Round(time.Millisecond))
		if code != 0 {
			t.Fatalf("exit %d with the opt-in\n%s", code, tail(errs, 30))
		}
		if got := strings.TrimSpace(b.exec(t, "storage", "findmnt", "-n", "-o", "FSTYPE", "--mountpoint", mount)); got != "ext4" {
			t.Errorf("%s: %q mounted, want the new ext4", mount, got)
		}
		rec := b.exec(t, "storage", "cat", "/var/lib/heatsible/volumes.json")
		if !strings.Contains(rec, id) || !strings.Contains(rec, `"identified_by": "device_name"`) {
			t.Errorf("the record does not have the volume:\n%s", rec)
		}

		// A reboot without the volume mounted, and a run without the
		// opt-in: the device name alone is enough now that its file system
		// was recorded for this volume.
		b.exec(t, "storage", "umount", mount)
		code, _, errs, took = b.heatsible(t, args...)
		t.Logf("without the opt-in, file system recorded: exit %d in %s", code, took.Round(time.Millisecond))
		if code != 0 {
			t.Fatalf("exit %d, want 0 (the recorded file system)\n%s", code, tail(errs, 30))
		}
		if _, err := b.try("storage", "findmnt", "--mountpoint", mount); err != nil {
			t.Errorf("%s is not mounted again", mount)
		}
	})

	t.Run("blank volume known by its SCSI name", func(t *testing.T) {
		// virtio-scsi: udev names the disk after VPD page 0x83, where QEMU
		// puts the serial (the volume id) cut to 20 characters.
		const mount = "/scratch-scsi"
		dev := b.scratchDeviceNamed(t, "/dev/hs-scsi", 64)
		b.cleanMount(t, mount)
		id := fmt.Sprintf("5c51d15c-0000-4000-8000-%012d", nonce)
		link := "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_" + id[:20]
		t.Cleanup(func() { b.try("storage", "rm", "-f", link) })
		b.exec(t, "storage", "sh", "-c", `mkdir -p /dev/disk/by-id && ln -sfn ../../hs-scsi "$1"`, "sh", link)
		code, _, errs, took := b.heatsible(t, b.withVolume(t, id, "/dev/vdz", mount, nil)...)
		t.Logf("SCSI name only (Heat says /dev/vdz, which does not exist): exit %d in %s", code, took.Round(time.Millisecond))
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, tail(errs, 30))
		}
		if got := strings.TrimSpace(b.exec(t, "storage", "findmnt", "-n", "-o", "SOURCE,FSTYPE", "--mountpoint", mount)); !strings.HasSuffix(got, " ext4") {
			t.Errorf("%s: %q mounted, want the new ext4 on %s", mount, got, dev)
		}
	})

	t.Run("clone of the bed's volume", func(t *testing.T) {
		const mount = "/scratch-clone"
		k := b.request(t).AdditionalParams.K
		orig := k.Storage.Volumes[0].MountTo
		src := strings.TrimSpace(b.exec(t, "storage", "findmnt", "-n", "-o", "SOURCE", "--mountpoint", orig))
		size := strings.TrimSpace(b.exec(t, "storage", "blockdev", "--getsize64", src))
		var mb int64
		fmt.Sscan(size, &mb)
		dev := b.scratchDeviceNamed(t, "/dev/hs-clone", mb>>20)
		b.exec(t, "storage", "dd", "if="+src, "of="+dev, "bs=4M", "conv=sparse,fsync", "status=none")
		uuid := strings.TrimSpace(b.exec(t, "storage", "blkid", "-p", "-o", "value", "-s", "UUID", dev))
		id := fmt.Sprintf("c10e0000-0000-4000-8000-%012d", nonce)
		b.byIDLink(t, id, dev)
		b.cleanMount(t, mount)
		fstab := b.exec(t, "storage", "cat", "/etc/fstab")
		mounts := func() string {
			return b.exec(t, "storage", "findmnt", "-n", "-r", "-o", "MAJ:MIN,TARGET")
		}
		before := mounts()

		code, _, errs, took := b.heatsible(t, b.withVolume(t, id, dev, mount, nil)...)
		msg := errorOf(errs)
		t.Logf("clone: exit %d in %s\n%s", code, took.Round(time.Millisecond), msg)
		if code != 6 {
			t.Fatalf("exit %d, want 6 (refused)\n%s", code, tail(errs, 30))
		}
		for _, w := range []string{"volume " + id, "carry the same file-system UUID " + uuid, "would be mounted twice", "tune2fs -U random"} {
			if !strings.Contains(msg, w) {
				t.Errorf("the refusal does not say %q", w)
			}
		}
		if after := mounts(); after != before {
			t.Errorf("the mounts changed:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		if got := b.exec(t, "storage", "cat", "/etc/fstab"); got != fstab {
			t.Errorf("/etc/fstab changed:\n%s", got)
		}
	})

	t.Run("another device on mount_to", func(t *testing.T) {
		const mount = "/scratch-taken"
		dev := b.scratchDeviceNamed(t, "/dev/hs-vol", 64)
		id := fmt.Sprintf("f0e1900d-0000-4000-8000-%012d", nonce)
		b.byIDLink(t, id, dev)
		other := b.scratchDeviceNamed(t, "/dev/hs-other", 64)
		b.cleanMount(t, mount)
		b.exec(t, "storage", "sh", "-c", `mkfs.ext4 -q "$1" && mkdir -p "$2" && mount "$1" "$2"`, "sh", other, mount)

		code, _, errs, took := b.heatsible(t, b.withVolume(t, id, dev, mount, nil)...)
		msg := errorOf(errs)
		t.Logf("another device on mount_to: exit %d in %s\n%s", code, took.Round(time.Millisecond), msg)
		if code != 6 {
			t.Fatalf("exit %d, want 6 (refused)\n%s", code, tail(errs, 30))
		}
		for _, w := range []string{other + " is mounted on " + mount + " (ext4,", "not the volume's disk", "neither mounts over it nor unmounts it"} {
			if !strings.Contains(msg, w) {
				t.Errorf("the refusal does not say %q", w)
			}
		}
		if got := strings.TrimSpace(b.exec(t, "storage", "findmnt", "-n", "-o", "SOURCE", "--mountpoint", mount)); got != other {
			t.Errorf("%s has %q mounted, want %s still", mount, got, other)
		}
		if out, err := b.try("storage", "blkid", "-p", dev); err == nil {
			t.Errorf("the volume's disk %s was formatted: %s", dev, out)
		}
	})
}
