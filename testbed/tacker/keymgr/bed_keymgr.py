"""The test bed's stand-in for Barbican as Tacker's key manager.

Tacker 16 stores a Kubernetes VIM's Fernet key only through its key manager
([k8s_vim] use_barbican = false makes every Kubernetes VIM registration fail
with "Barbican must be enabled for VIM ..."), and the bed has no Barbican.
tacker.conf's [key_manager] api_class names this class; it answers Tacker's
KeyManager interface (tacker/keymgr/key_manager.py) as
BarbicanKeyManager does for what Tacker uses (store -> a secret's UUID;
get -> an object whose .payload is what was stored; delete), keeping each
secret in a 0600 file of BED_KEYMGR_DIR and recording every call (no payload)
in BED_KEYMGR_DIR/calls.log.
"""

import json
import os
import time
import uuid

from tacker.keymgr import exception
from tacker.keymgr import key_manager


class _Secret(object):
    def __init__(self, payload):
        self.payload = payload


class FileKeyManager(key_manager.KeyManager):

    def __init__(self, auth_url):
        self.dir = os.environ.get('BED_KEYMGR_DIR')
        if not self.dir:
            raise exception.KeyManagerError(reason='BED_KEYMGR_DIR is not set')
        os.makedirs(self.dir, mode=0o700, exist_ok=True)

    def _record(self, call, secret_id):
        with open(os.path.join(self.dir, 'calls.log'), 'a') as f:
            f.write(json.dumps({'time': time.time(), 'call': call, 'id': secret_id,
                                'pid': os.getpid()}) + '\n')

    def _path(self, secret_id):
        uuid.UUID(secret_id)  # refuses anything but a UUID (no path tricks)
        return os.path.join(self.dir, secret_id)

    def store(self, context, managed_object, expiration=None):
        secret_id = str(uuid.uuid4())
        if isinstance(managed_object, bytes):
            managed_object = managed_object.decode('utf-8')
        fd = os.open(self._path(secret_id), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, 'w') as f:
            f.write(managed_object)
        self._record('store', secret_id)
        return secret_id

    def get(self, context, managed_object_id, metadata_only=False):
        self._record('get', managed_object_id)
        try:
            with open(self._path(managed_object_id)) as f:
                return _Secret(f.read())
        except FileNotFoundError:
            raise exception.ManagedObjectNotFoundError(uuid=managed_object_id)

    def delete(self, context, managed_object_id):
        self._record('delete', managed_object_id)
        try:
            os.remove(self._path(managed_object_id))
        except FileNotFoundError:
            raise exception.ManagedObjectNotFoundError(uuid=managed_object_id)
