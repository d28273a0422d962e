# -*- coding: utf-8 -*-
"""cinder_volume's judgement, on the controller (tests: tests/unit/plugins/filter/).

files/probe.sh looks at the storage server and prints JSON; the filters here
decide, from that and the role's variables, which disk is which volume,
whether it may be formatted or mounted, and what the role must change.
Everything that can refuse is here, with its message.

The rules (README.md, "Which disk is the volume"):

- A volume is identified by its id: the /dev/disk/by-id names udev derives
  from the disk serial Nova sets to the volume id (cinder_volume_byid_names).
  Only such a disk is ever formatted.
- Heat's device name (/dev/vdb) follows attach order and is only a hint. A
  disk known only by that name is mounted when its file system is the one an
  earlier heatsible run recorded for this volume id (the state file), and is
  never formatted; with cinder_volume_trust_device_name (the request's
  storage_server.volume_identification: device_name, for platforms whose disks
  carry no serial) it is treated as identified.
- Two volumes with the same file-system UUID (a clone), a disk claimed by two
  volumes, and anything else mounted on mount_to are refused.
"""

import json
import re

STATE_VERSION = 1


def cinder_volume_byid_names(volume_id):
    """The /dev/disk/by-id names udev gives a disk whose serial is the
    volume id, for the buses Nova's libvirt driver attaches volumes with:

    - virtio-blk (the default): the serial, cut to 20 characters by the
      virtio-blk ID field: virtio-<id[:20]>;
    - virtio-scsi (hw_scsi_model=virtio-scsi): udev's scsi_id reads VPD page
      0x83, whose vendor-specific designator QEMU fills with the serial cut to
      20 characters (device_id): scsi-0QEMU_QEMU_HARDDISK_<id[:20]>; older
      QEMUs put the whole serial there: scsi-0QEMU_QEMU_HARDDISK_<id>; with
      sg3-utils-udev the page 0x80 serial (up to 36 characters, a whole UUID)
      also gives scsi-SQEMU_QEMU_HARDDISK_<id>;
    - SATA/IDE (hw_disk_bus=sata): the ATA serial is 20 characters:
      ata-QEMU_HARDDISK_<id[:20]>.
    """
    i = str(volume_id)
    names = [
        'virtio-' + i[:20],
        'scsi-0QEMU_QEMU_HARDDISK_' + i[:20],
        'scsi-0QEMU_QEMU_HARDDISK_' + i,
        'scsi-SQEMU_QEMU_HARDDISK_' + i,
        'ata-QEMU_HARDDISK_' + i[:20],
    ]
    out = []
    for n in names:
        p = '/dev/disk/by-id/' + n
        if p not in out:
            out.append(p)
    return out


def cinder_volume_probe_argv(volumes, exports, state_file):
    """The probe's arguments (see files/probe.sh)."""
    argv = [str(state_file)]
    for v in volumes:
        vid = str(v.get('id') or '')
        argv += ['--volume', vid, str(v['mount_to']), str(v.get('device') or '')]
        argv += cinder_volume_byid_names(vid) if vid else []
    argv.append('--dirs')
    seen = []
    for e in exports:
        if e['dir'] not in seen:
            seen.append(e['dir'])
    return argv + seen


def _majmin_hex(s):
    """'7:0' from stat's '%t:%T' ('7:0', hex)."""
    try:
        a, b = s.split(':')
        return '%d:%d' % (int(a, 16), int(b, 16))
    except (ValueError, AttributeError):
        return ''


def _state(doc):
    """The state file's volumes ({} when missing), and a problem when it is
    not a record heatsible wrote."""
    raw = doc.get('state')
    if raw is None:
        return {}, ''
    try:
        st = json.loads(raw)
        vols = st['volumes']
        if not isinstance(vols, dict):
            raise ValueError('volumes is not an object')
        return vols, ''
    except (ValueError, KeyError, TypeError) as e:
        return {}, 'cannot be read (%s)' % e


def _fstab_src(v, dev_info):
    """What fstab names the file system by: its UUID when libblkid resolves
    that UUID to this disk and to no other (what mount and systemd do at
    boot); else the by-id name (tied to the volume); else the device name."""
    majmin = _majmin_hex(dev_info.get('majmin', ''))
    same = [s.split(' ', 1)[0] for s in dev_info.get('same_uuid', [])]
    if dev_info.get('uuid') and same and all(_majmin_hex(m) == majmin for m in same):
        return 'UUID=' + dev_info['uuid']
    return v['path']


def cinder_volume_plan(probe_stdout, volumes, settings):
    """Judge the probe (see the module doc). settings: fstype, mountable,
    mount_opts, passno, trust_device_name, state_file.

    Returns {"problems": [...], "volumes": [...], "record": {...},
    "record_changed": bool, "dirs": {...}, "notes": [...], "todo": bool}.
    Each volume: id, mount_to, path (the name the role uses: a by-id name,
    or Heat's device name), dev (the device node it resolves to),
    identified_by ("id", "record" or "device_name"), mkfs, fstype, src
    (fstab's first field; "" before mkfs), mount (the mount task has work),
    converged."""
    doc = json.loads(probe_stdout)
    fstype_new = settings['fstype']
    mountable = list(settings['mountable'])
    trust = bool(settings.get('trust_device_name'))
    state_file = settings['state_file']
    devices = doc.get('devices', {})
    record, state_problem = _state(doc)
    new_record = dict(record)
    udev = doc.get('udev')
    settle = {'settled': 'after udevadm settle', 'timeout': 'udevadm settle timed out',
              'absent': 'no udevadm on this host'}.get(udev, udev)
    problems, notes, plan = [], [], []
    by_param = dict((str(v.get('id') or ''), v) for v in volumes)

    for pv in doc.get('volumes', []):
        vid, mount_to = pv['id'], pv['mount_to']
        param = by_param.get(vid, {})
        who = "volume %s (mount_to %s)" % (vid or repr(param.get('device')), mount_to)
        found = [n for n in pv.get('names', []) if n['kind'] == 'block']
        heat = pv.get('heat') or None
        heat_dev = heat['dev'] if heat and heat['kind'] == 'block' else ''
        v = {'id': vid, 'mount_to': mount_to, 'path': '', 'dev': '', 'identified_by': '',
             'mkfs': False, 'fstype': '', 'src': '', 'mount': False, 'converged': False}
        if len(set(n['dev'] for n in found)) > 1:
            problems.append('%s: its by-id names lead to different disks (%s): heatsible cannot tell which one is the'
                            ' volume and touches none.' % (who, ', '.join('%s -> %s' % (n['path'], n['dev']) for n in found)))
            continue
        if found:
            v.update(path=found[0]['path'], dev=found[0]['dev'], identified_by='id')
            if heat_dev and heat_dev != v['dev']:
                notes.append("%s is %s (%s); Heat's device name %s is another disk (%s), as device names follow attach"
                             ' order.' % (who, v['path'], v['dev'], heat['path'], heat_dev))
        elif heat_dev:
            info = devices.get(heat_dev, {})
            rec = record.get(vid) if isinstance(record.get(vid), dict) else None
            recorded = rec is not None and info.get('rc') == 0 and info.get('uuid') \
                and rec.get('uuid') == info.get('uuid') and rec.get('type') == info.get('type')
            if trust:
                v.update(path=heat['path'], dev=heat_dev, identified_by='device_name')
            elif recorded:
                v.update(path=heat['path'], dev=heat_dev, identified_by='record')
            else:
                if info.get('rc') == 2:
                    what = 'which holds nothing'
                elif info.get('rc') == 0 and info.get('uuid'):
                    what = ('whose %s %s no earlier heatsible run recorded for this volume in %s%s'
                            % (info.get('type') or 'file system', info.get('uuid'), state_file,
                               (' (the file ' + state_problem + ')') if state_problem else
                               (' (recorded: %s %s)' % (rec.get('type'), rec.get('uuid')) if rec else '')))
                else:
                    what = 'on which blkid -p found no file system with a UUID'
                problems.append(
                    "%s is known only by Heat's device name %s, %s: heatsible neither formats nor mounts it"
                    ' (device names follow attach order). If this platform\'s disks carry no serial, set'
                    ' storage_server.volume_identification to "device_name" in the request. Looked for %s (%s).'
                    % (who, heat['path'], what, _looked(pv, vid), settle))
                continue
        else:
            problems.append("no block device found for %s: neither its by-id names nor Heat's device name '%s'"
                            ' exist as block devices. Is the volume attached to this server? Looked for %s (%s).'
                            % (who, (heat or {}).get('path', ''), _looked(pv, vid), settle))
            continue

        info = devices.get(v['dev'], {})
        rc, fstype = info.get('rc', -1), info.get('type', '')
        if rc == 2:
            if v['identified_by'] in ('id', 'device_name'):
                v.update(mkfs=True, fstype=fstype_new)
            else:  # not reachable: a recorded file system has a UUID
                problems.append('%s: %s holds nothing; heatsible formats only a disk identified by the volume id.'
                                % (who, v['path']))
                continue
        elif rc != 0:
            problems.append('blkid -p %s failed (rc %s, e.g. an ambiguous probe): nothing was done to it (%s).'
                            % (v['path'], rc, who))
            continue
        elif fstype not in mountable:
            problems.append(
                '%s (%s, volume %s) holds %s. heatsible never formats over an existing signature and mounts only %s.'
                ' Inspect it with "wipefs -n %s"; wipe it yourself only if its content is really not needed.'
                % (v['path'], v['dev'], vid, ('"%s"' % fstype) if fstype else
                   'a signature that is not a file system (a partition table?)',
                   ', '.join(mountable), v['dev']))
            continue
        else:
            v['fstype'] = fstype
            v['src'] = _fstab_src(v, info)
            if v['identified_by'] in ('id', 'device_name'):
                want = {'uuid': info.get('uuid', ''), 'type': fstype, 'identified_by': v['identified_by']}
                if new_record.get(vid) != want:
                    new_record[vid] = want

        # mount_to: nothing mounted, or this disk on top; anything else is
        # refused (never mounted over, never unmounted).
        majmin = _majmin_hex(info.get('majmin', ''))
        mounts = [m.split(' ') for m in pv.get('mounts', [])]
        if mounts:
            top = mounts[-1]
            if top[0] != majmin:
                problems.append(
                    '%s: %s is mounted on %s (%s, device %s), not the volume\'s disk %s (%s, device %s). heatsible'
                    ' neither mounts over it nor unmounts it: unmount it yourself if it is not in use, then re-run.'
                    % (who, _unescape(top[1]) if len(top) > 1 else '?', mount_to, top[2] if len(top) > 2 else '?',
                       top[0], v['path'], v['dev'], majmin))
                continue
        v['mounted'] = bool(mounts)
        v['fstab_now'] = pv.get('fstab', '')
        plan.append(v)

    # Duplicate file systems (a cloned volume): fstab by UUID would mount one
    # of them twice, and blkid -U picks either.
    by_uuid = {}
    for v in plan:
        info = devices.get(v['dev'], {})
        if info.get('rc') == 0 and info.get('uuid'):
            by_uuid.setdefault(info['uuid'], []).append(v)
    for uuid, vs in sorted(by_uuid.items()):
        mine = set(_majmin_hex(devices[v['dev']]['majmin']) for v in vs)
        others = [s for s in devices[vs[0]['dev']].get('same_uuid', [])
                  if _majmin_hex(s.split(' ', 1)[0]) not in mine]
        if len(vs) > 1 or others:
            names = ['volume %s (%s, %s)' % (v['id'], v['path'], v['dev']) for v in vs] + \
                    ['%s (not one of the volumes)' % s.split(' ', 1)[1] for s in others if ' ' in s]
            problems.append(
                '%s carry the same file-system UUID %s (one is a clone of the other): fstab names file systems by'
                ' UUID, so one of them would be mounted twice. Give the clone a new UUID while it is unmounted'
                ' (ext4: tune2fs -U random DEVICE; xfs: xfs_admin -U generate DEVICE), then re-run.'
                % (' and '.join(names), uuid))
    seen = {}
    for v in plan:
        if v['dev'] in seen:
            problems.append('volumes %s and %s both lead to the disk %s (%s and %s): heatsible touches neither.'
                            % (seen[v['dev']]['id'], v['id'], v['dev'], seen[v['dev']]['path'], v['path']))
        seen[v['dev']] = v

    for v in plan:
        if v['mkfs']:
            v['mount'] = True
            continue
        want = ' '.join([v['src'], v['mount_to'], v['fstype'], settings['mount_opts'], '0', str(settings['passno'])])
        v['converged'] = v['mounted'] and v.pop('fstab_now') == want
        v['mount'] = not v['converged']

    record_doc = {'version': STATE_VERSION, 'volumes': new_record}
    return {
        'problems': problems,
        'volumes': plan,
        'record': record_doc,
        'record_changed': new_record != record,
        'dirs': doc.get('dirs', {}),
        'notes': notes,
        'todo': (any(not v['converged'] for v in plan) or new_record != record
                 or any(s != 'dir' for s in doc.get('dirs', {}).values())),
    }


def _looked(pv, vid):
    """The by-id names looked for, short: the virtio one whole, the others
    by their prefix."""
    names = [n['path'] for n in pv.get('names', [])]
    if not names:
        return "no by-id name (the volume has no id)"
    rest = sorted(set(re.sub(r'_[^_]*$', '_', n.rsplit('/', 1)[1]) + '<id>' for n in names[1:]))
    return names[0] + (' and ' + ', '.join(rest) if rest else '')


def _unescape(s):
    """findmnt -r's \\xHH escapes."""
    return re.sub(r'\\x([0-9a-fA-F]{2})', lambda m: chr(int(m.group(1), 16)), s)


class FilterModule(object):
    def filters(self):
        return {
            'cinder_volume_byid_names': cinder_volume_byid_names,
            'cinder_volume_probe_argv': cinder_volume_probe_argv,
            'cinder_volume_plan': cinder_volume_plan,
        }
