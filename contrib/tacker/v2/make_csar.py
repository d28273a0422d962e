#!/usr/bin/env python3
"""Build the v2 PV package (a CSAR zip) from pv_package/.

    python3 make_csar.py OUT.zip [--etsi-dir DIR] [--script FILE] [--vnfd-id ID]

The zip holds pv_package/ as it is, plus what is not kept in this
repository:

- Scripts/heatsible_vnflcm_v2.py: the v2 script (../heatsible_vnflcm_v2.py,
  or --script FILE), byte for byte;
- Definitions/etsi_nfv_sol001_common_types.yaml and
  etsi_nfv_sol001_vnfd_types.yaml: ETSI's SOL001 type definitions, which
  every Tacker VNFD imports. They are ETSI's files and come with Tacker:
  --etsi-dir DIR, else the copy inside the Tacker installed for the Python
  that runs this (tacker/tests/unit/vnfm/infra_drivers/openstack/data/
  etsi_nfv/, SOL001 v2.6.1), found without importing Tacker.

--vnfd-id ID gives the VNFD another id (every occurrence of the package's
in Definitions/): Tacker refuses a second package with a VNFD id it has
onboarded already, so a test bed that uploads the package again and again,
beside an old one, makes a fresh id each time.

Standard library only.
"""

import argparse
import importlib.util
import os
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, 'pv_package')
SCRIPT = os.path.join(os.path.dirname(HERE), 'heatsible_vnflcm_v2.py')
VNFD_ID = '5a1e0c3b-7d2f-4c8e-9b6a-4e2a7f3c9d10'
ETSI_FILES = ('etsi_nfv_sol001_common_types.yaml',
              'etsi_nfv_sol001_vnfd_types.yaml')
ETSI_IN_TACKER = ('tests', 'unit', 'vnfm', 'infra_drivers', 'openstack',
                  'data', 'etsi_nfv')


def installed_etsi_dir():
    spec = importlib.util.find_spec('tacker')
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        d = os.path.join(loc, *ETSI_IN_TACKER)
        if all(os.path.isfile(os.path.join(d, f)) for f in ETSI_FILES):
            return d
    return None


def build(out, etsi_dir=None, script=SCRIPT, vnfd_id=None):
    etsi_dir = etsi_dir or installed_etsi_dir()
    if not etsi_dir:
        raise SystemExit('make_csar: no ETSI SOL001 type definitions: give '
                         '--etsi-dir, or run this with the Python of a '
                         'Tacker installation')
    for f in ETSI_FILES:
        if not os.path.isfile(os.path.join(etsi_dir, f)):
            raise SystemExit('make_csar: %s is not in %s' % (f, etsi_dir))
    entries = []
    for root, dirs, files in os.walk(PACKAGE):
        dirs.sort()
        for f in sorted(files):
            path = os.path.join(root, f)
            entries.append((os.path.relpath(path, PACKAGE), path))
    entries.append((os.path.join('Scripts', os.path.basename(SCRIPT)),
                    script))
    for f in ETSI_FILES:
        entries.append((os.path.join('Definitions', f),
                        os.path.join(etsi_dir, f)))
    tmp = out + '.tmp'
    with zipfile.ZipFile(tmp, 'w', zipfile.ZIP_DEFLATED) as z:
        for name, path in entries:
            if vnfd_id and name.startswith('Definitions' + os.sep) and \
                    not name.endswith(ETSI_FILES):
                with open(path) as f:
                    text = f.read().replace(VNFD_ID, vnfd_id)
                z.writestr(name, text)
                continue
            z.write(path, name)
    os.replace(tmp, out)
    return [name for name, _ in entries]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('out', help='the zip to write')
    ap.add_argument('--etsi-dir', help='directory with ' +
                    ' and '.join(ETSI_FILES))
    ap.add_argument('--script', default=SCRIPT,
                    help='the v2 script to carry (default: %(default)s)')
    ap.add_argument('--vnfd-id', help='the VNFD id to give the package '
                    '(default: %s)' % VNFD_ID)
    a = ap.parse_args(argv)
    names = build(a.out, a.etsi_dir, a.script, a.vnfd_id)
    print('%s: %d files' % (a.out, len(names)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
