# -*- coding: utf-8 -*-
"""Unit tests of plugins/filter/cinder_volume.py on probe outputs recorded on
the test bed (probe/README.md says how), and on variants derived from them the
way the bed's e2e tests make them for real (a link removed, a clone, a
foreign mount).

    make role-tests
"""

import copy
import json
import os
import unittest

from ansible_collections.heatsible.nfv.plugins.filter import cinder_volume as cv

HERE = os.path.dirname(os.path.abspath(__file__))

VID = '33faa4f9-4a45-435c-94ed-9bd4df7a7141'
UUID = '1b4448c8-e348-4579-befb-f3f3e43b9314'
BYID = '/dev/disk/by-id/virtio-33faa4f9-4a45-435c-9'
SETTINGS = {'fstype': 'ext4', 'mountable': ['ext4', 'ext3', 'ext2', 'xfs', 'btrfs'],
            'mount_opts': 'defaults,nofail', 'passno': '2', 'trust_device_name': False,
            'state_file': '/var/lib/heatsible/volumes.json'}
VOLUMES = [{'id': VID, 'device': '/dev/vdb', 'mount_to': '/volume'}]


def recorded(name):
    with open(os.path.join(HERE, 'probe', name + '.json')) as f:
        return json.load(f)


def plan(doc, volumes=None, **settings):
    s = dict(SETTINGS)
    s.update(settings)
    return cv.cinder_volume_plan(json.dumps(doc), volumes or VOLUMES, s)


def without_links(doc):
    """The by-id link removed, as TestVolumeIdentity does on the bed."""
    doc = copy.deepcopy(doc)
    for v in doc['volumes']:
        for n in v['names']:
            n['kind'], n['dev'] = 'none', ''
    return doc


def with_record(doc, uuid=UUID, typ='ext4'):
    doc = copy.deepcopy(doc)
    doc['state'] = json.dumps({'version': 1, 'volumes': {VID: {'uuid': uuid, 'type': typ, 'identified_by': 'id'}}})
    return doc


def one(problems):
    if len(problems) != 1:
        raise AssertionError('want one problem, got %d: %s' % (len(problems), problems))
    return problems[0]


class ByIdNames(unittest.TestCase):
    def test_names(self):
        self.assertEqual(cv.cinder_volume_byid_names(VID), [
            '/dev/disk/by-id/virtio-33faa4f9-4a45-435c-9',
            '/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_33faa4f9-4a45-435c-9',
            '/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_' + VID,
            '/dev/disk/by-id/scsi-SQEMU_QEMU_HARDDISK_' + VID,
            '/dev/disk/by-id/ata-QEMU_HARDDISK_33faa4f9-4a45-435c-9',
        ])

    def test_short_id_no_duplicates(self):
        self.assertEqual(len(cv.cinder_volume_byid_names('abc')), 4)

    def test_argv(self):
        argv = cv.cinder_volume_probe_argv(VOLUMES, [{'dir': '/volume/a'}, {'dir': '/volume/a'}, {'dir': '/volume/b'}],
                                           '/var/lib/heatsible/volumes.json')
        self.assertEqual(argv[:5], ['/var/lib/heatsible/volumes.json', '--volume', VID, '/volume', '/dev/vdb'])
        self.assertEqual(argv[-3:], ['--dirs', '/volume/a', '/volume/b'])


class Params(unittest.TestCase):
    def test_hostile_id(self):
        p = one(cv.cinder_volume_param_problems([{'id': '../../sda', 'mount_to': '/volume'}], [{'dir': '/volume/a'}]))
        self.assertIn("id '../../sda' is not a Cinder volume id", p)

    def test_bad_device(self):
        p = one(cv.cinder_volume_param_problems([{'id': VID, 'device': '/tmp/x', 'mount_to': '/volume'}], []))
        self.assertIn("device '/tmp/x' is not a /dev path", p)

    def test_outside(self):
        p = one(cv.cinder_volume_param_problems(VOLUMES, [{'dir': '/volume/a'}, {'dir': '/srv/out'}]))
        self.assertIn("export directories ['/srv/out'] are not under any volume mount point", p)
        self.assertEqual(cv.cinder_volume_param_problems(VOLUMES, [{'dir': '/srv/out'}], True), [])

    def test_equal_to_mount_point_is_inside(self):
        self.assertEqual(cv.cinder_volume_param_problems(VOLUMES, [{'dir': '/volume'}]), [])


class Plan(unittest.TestCase):
    def test_blank_identified_by_id_is_formatted(self):
        p = plan(recorded('bed_blank'))
        self.assertEqual(p['problems'], [])
        v = p['volumes'][0]
        self.assertEqual((v['path'], v['dev'], v['identified_by'], v['mkfs'], v['mount']),
                         (BYID, '/dev/vdb', 'id', True, True))
        self.assertTrue(p['todo'])
        self.assertFalse(p['record_changed'], 'nothing to record before mkfs')

    def test_blank_known_only_by_heat_name_is_refused(self):
        p = one(plan(without_links(recorded('bed_blank')))['problems'])
        for want in ["volume %s (mount_to /volume) is known only by Heat's device name /dev/vdb, which holds nothing" % VID,
                     'heatsible neither formats nor mounts it',
                     'set storage_server.volume_identification to "device_name" in the request',
                     'Looked for %s and ata-QEMU_HARDDISK_<id>, scsi-0QEMU_QEMU_HARDDISK_<id>,'
                     ' scsi-SQEMU_QEMU_HARDDISK_<id> (no udevadm on this host)' % BYID]:
            self.assertIn(want, p)

    def test_blank_with_the_opt_in_is_formatted(self):
        p = plan(without_links(recorded('bed_blank')), trust_device_name=True)
        self.assertEqual(p['problems'], [])
        v = p['volumes'][0]
        self.assertEqual((v['path'], v['identified_by'], v['mkfs']), ('/dev/vdb', 'device_name', True))

    def test_first_run_after_upgrade_records(self):
        p = plan(recorded('bed_mounted_norecord'))
        self.assertEqual(p['problems'], [])
        v = p['volumes'][0]
        self.assertTrue(v['converged'])
        self.assertEqual(v['src'], 'UUID=' + UUID)
        self.assertTrue(p['record_changed'])
        self.assertEqual(p['record'], {'version': 1, 'volumes': {VID: {'uuid': UUID, 'type': 'ext4', 'identified_by': 'id'}}})
        self.assertTrue(p['todo'])

    def test_converged(self):
        p = plan(with_record(recorded('bed_mounted_norecord')))
        self.assertEqual(p['problems'], [])
        self.assertFalse(p['record_changed'])
        self.assertFalse(p['todo'])

    def test_heat_name_with_the_recorded_file_system_is_mounted(self):
        doc = with_record(without_links(recorded('bed_mounted_norecord')))
        p = plan(doc)
        self.assertEqual(p['problems'], [])
        v = p['volumes'][0]
        self.assertEqual((v['path'], v['identified_by'], v['mkfs'], v['converged']), ('/dev/vdb', 'record', False, True))
        self.assertFalse(p['record_changed'])

    def test_heat_name_with_another_file_system_is_refused(self):
        other = '0d5c9a44-0000-4000-8000-00000000beef'
        p = one(plan(with_record(without_links(recorded('bed_mounted_norecord')), uuid=other))['problems'])
        self.assertIn('whose ext4 %s no earlier heatsible run recorded for this volume' % UUID, p)
        self.assertIn('(recorded: ext4 %s)' % other, p)

    def test_heat_name_without_record_is_refused(self):
        p = one(plan(without_links(recorded('bed_mounted_norecord')))['problems'])
        self.assertIn('no earlier heatsible run recorded for this volume in /var/lib/heatsible/volumes.json', p)

    def test_unreadable_record(self):
        doc = without_links(recorded('bed_mounted_norecord'))
        doc['state'] = '{not json'
        p = one(plan(doc)['problems'])
        self.assertIn('(the file cannot be read', p)

    def test_heat_hint_naming_another_disk(self):
        doc = recorded('bed_mounted_norecord')
        doc['volumes'][0]['heat'] = {'path': '/dev/vdc', 'kind': 'block', 'dev': '/dev/vdc'}
        p = plan(doc)
        self.assertEqual(p['problems'], [])
        self.assertEqual(p['volumes'][0]['path'], BYID)
        self.assertIn("Heat's device name /dev/vdc is another disk (/dev/vdc)", ' '.join(p['notes']))

    def test_by_id_names_disagree(self):
        doc = recorded('bed_blank')
        doc['volumes'][0]['names'][2].update(kind='block', dev='/dev/sdb')
        p = one(plan(doc)['problems'])
        self.assertIn('its by-id names lead to different disks', p)
        self.assertIn('-> /dev/sdb', p)

    def test_clone_is_refused(self):
        """Volume 2 a block copy of volume 1: the same file-system UUID."""
        doc = with_record(recorded('bed_mounted_norecord'))
        v2 = copy.deepcopy(doc['volumes'][0])
        vid2 = '7e0c2f52-1111-4222-8333-444455556666'
        v2.update(id=vid2, mount_to='/volume2', mounts=[], fstab='')
        v2['names'][0].update(path='/dev/disk/by-id/virtio-' + vid2[:20], dev='/dev/vdc')
        v2['heat'] = {'path': '/dev/vdc', 'kind': 'block', 'dev': '/dev/vdc'}
        doc['volumes'].append(v2)
        doc['devices']['/dev/vdc'] = dict(doc['devices']['/dev/vdb'], majmin='7:1')
        for d in doc['devices'].values():
            d['same_uuid'] = ['7:0 /dev/vdb', '7:1 /dev/vdc']
        vols = VOLUMES + [{'id': vid2, 'device': '/dev/vdc', 'mount_to': '/volume2'}]
        p = one(plan(doc, vols)['problems'])
        self.assertIn('volume %s (%s, /dev/vdb) and volume %s' % (VID, BYID, vid2), p)
        self.assertIn('carry the same file-system UUID ' + UUID, p)
        self.assertIn('tune2fs -U random', p)

    def test_same_uuid_elsewhere_on_the_host(self):
        doc = with_record(recorded('bed_mounted_norecord'))
        doc['devices']['/dev/vdb']['same_uuid'].append('8:16 /dev/sdb')
        p = one(plan(doc)['problems'])
        self.assertIn('/dev/sdb (not one of the volumes) carry the same file-system UUID', p)

    def test_foreign_mount_is_refused(self):
        doc = with_record(recorded('bed_mounted_norecord'))
        doc['volumes'][0]['mounts'] = ['7:5 /dev/hs-foreign ext4']
        p = one(plan(doc)['problems'])
        self.assertIn('/dev/hs-foreign is mounted on /volume (ext4, device 7:5), not the volume\'s disk', p)
        self.assertIn('neither mounts over it nor unmounts it', p)

    def test_foreign_mount_over_the_volume_is_refused(self):
        doc = with_record(recorded('bed_mounted_norecord'))
        doc['volumes'][0]['mounts'].append('0:52 tmpfs tmpfs')
        self.assertIn('tmpfs is mounted on /volume (tmpfs, device 0:52)', one(plan(doc)['problems']))

    def test_mounted_but_fstab_differs(self):
        doc = with_record(recorded('bed_mounted_norecord'))
        doc['volumes'][0]['fstab'] = '/dev/vdb /volume ext4 defaults 0 2'
        v = plan(doc)['volumes'][0]
        self.assertEqual((v['converged'], v['mount']), (False, True))

    def test_swap_is_refused(self):
        doc = recorded('bed_blank')
        doc['devices']['/dev/vdb'].update(rc=0, type='swap', uuid='5a3c0000-0000-4000-8000-000000000000')
        p = one(plan(doc)['problems'])
        self.assertIn('%s (/dev/vdb, volume %s) holds "swap"' % (BYID, VID), p)
        self.assertIn('wipefs -n /dev/vdb', p)

    def test_partition_table_is_refused(self):
        doc = recorded('bed_blank')
        doc['devices']['/dev/vdb'].update(rc=0, type='', uuid='')
        self.assertIn('holds a signature that is not a file system (a partition table?)', one(plan(doc)['problems']))

    def test_no_device(self):
        doc = without_links(recorded('bed_blank'))
        doc['volumes'][0]['heat'] = {'path': '/dev/vdb', 'kind': 'none', 'dev': ''}
        p = one(plan(doc)['problems'])
        self.assertIn("no block device found for volume %s (mount_to /volume): neither its by-id names nor Heat's device name '/dev/vdb' exist" % VID, p)

    def test_two_volumes_one_disk(self):
        doc = recorded('bed_mounted_norecord')
        v2 = copy.deepcopy(doc['volumes'][0])
        v2.update(id='7e0c2f52-1111-4222-8333-444455556666', mount_to='/volume2', mounts=[], fstab='')
        doc['volumes'].append(v2)
        vols = VOLUMES + [{'id': v2['id'], 'device': '/dev/vdb', 'mount_to': '/volume2'}]
        self.assertTrue(any('both lead to the disk /dev/vdb' in p for p in plan(doc, vols)['problems']))


if __name__ == '__main__':
    unittest.main()
