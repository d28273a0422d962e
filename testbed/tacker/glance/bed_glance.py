#!/usr/bin/env python3
"""A stand-in for OpenStack Glance's image API v2, for the bed's Tacker.

The bed has no Glance, and Tacker asks it for images: Tacker's v2 local NFVO
lists the VNF instance's images (GET /v2/images?tag=<instance id>) at the
grant of every heal and scale-out, and deletes them after a terminate and
after a rolled-back instantiation; both APIs upload a package's sw_image
artifacts (POST /v2/images, PUT /v2/images/<id>/file) at instantiate. It
answers those as Glance 2 does (docs/testbed.md, "The Glance stand-in"):

  GET /, GET /versions          the version document (300 at /, 200 at /versions)
  GET /v2/images                the list, filtered by name, tag, status,
                                visibility; sorted by created_at desc;
                                limit/marker pagination with "next"
  GET /v2/images/<id>           one image (404 when unknown)
  POST /v2/images               create (201, status "queued")
  PUT /v2/images/<id>/file      upload the data (204; checksum, os_hash_value,
                                size, status "active")
  GET /v2/images/<id>/file      download
  DELETE /v2/images/<id>        delete (204; 404 when unknown)
  GET /v2/schemas/image(s)      a minimal schema

Every request needs a Keystone token (X-Auth-Token), checked with Keystone
(GET /v3/auth/tokens, the token validating itself), else 401, as
keystonemiddleware answers. Images are private to the token's project unless
their visibility says otherwise.

Records: every request is appended as one JSON line to DIR/calls.log
(time, method, path, query, project, status; never the token); images are kept
in DIR/images.json and their data in DIR/data/.

  bed_glance.py --port 29292 --dir DIR --keystone http://127.0.0.1:25000
"""
import argparse
import datetime
import hashlib
import http.server
import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

LOCK = threading.Lock()
ARGS = None
TOKENS = {}  # token sha256 -> (project id, expiry)


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def load():
    try:
        with open(os.path.join(ARGS.dir, 'images.json')) as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def save(images):
    p = os.path.join(ARGS.dir, 'images.json')
    with open(p + '.tmp', 'w') as f:
        json.dump(images, f, indent=1)
    os.replace(p + '.tmp', p)


def record(entry):
    with LOCK, open(os.path.join(ARGS.dir, 'calls.log'), 'a') as f:
        f.write(json.dumps(entry, sort_keys=True) + '\n')


def token_project(token):
    """The token's project id, asked of Keystone (cached 60 s), or None."""
    key = hashlib.sha256(token.encode()).hexdigest()
    hit = TOKENS.get(key)
    if hit and hit[1] > time.time():
        return hit[0]
    req = urllib.request.Request(ARGS.keystone.rstrip('/') + '/v3/auth/tokens',
                                 headers={'X-Auth-Token': token, 'X-Subject-Token': token})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            body = json.load(r)
    except (urllib.error.URLError, ValueError):
        return None
    project = ((body.get('token') or {}).get('project') or {}).get('id')
    if project:
        TOKENS[key] = (project, time.time() + 60)
    return project


def base_url():
    return 'http://127.0.0.1:%d' % ARGS.port


VERSIONS = lambda: {'versions': [  # noqa: E731
    {'id': 'v2.%d' % n, 'status': 'CURRENT' if n == 16 else 'SUPPORTED',
     'links': [{'rel': 'self', 'href': base_url() + '/v2/'}]}
    for n in range(16, 8, -1)]}


class Handler(http.server.BaseHTTPRequestHandler):
    server_version = 'bed-glance/1'
    protocol_version = 'HTTP/1.1'

    def log_message(self, fmt, *args):  # calls.log has them
        pass

    def reply(self, status, body=None, ctype='application/json', headers=()):
        data = b''
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        if body is not None:
            self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if data and self.command != 'HEAD':
            self.wfile.write(data)
        self.status = status

    def error(self, status, title, msg):
        self.reply(status, {'code': status, 'title': title, 'message': msg})

    def body(self):
        n = int(self.headers.get('Content-Length') or 0)
        return self.rfile.read(n) if n else b''

    def handle_one(self):
        url = urllib.parse.urlsplit(self.path)
        path = url.path.rstrip('/') or '/'
        query = urllib.parse.parse_qs(url.query)
        self.status = 0
        self.project = None
        try:
            self.route(self.command, path, query)
        finally:
            record({'time': now(), 'method': self.command, 'path': url.path,
                    'query': {k: v if len(v) > 1 else v[0] for k, v in query.items()},
                    'project': self.project, 'status': self.status})

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_one

    def route(self, method, path, query):
        if path in ('/', '/versions') and method in ('GET', 'HEAD'):
            return self.reply(300 if path == '/' else 200, VERSIONS())
        token = self.headers.get('X-Auth-Token')
        self.project = token_project(token) if token else None
        if not self.project:
            return self.error(401, 'Unauthorized', 'The request you have made requires authentication.')
        parts = path.strip('/').split('/')
        if parts[:1] != ['v2']:
            return self.error(404, 'Not Found', 'The resource could not be found.')
        if parts[1:2] == ['schemas']:
            return self.reply(200, {'name': parts[2] if len(parts) > 2 else 'images', 'properties': {}})
        if parts[1:2] != ['images']:
            return self.error(404, 'Not Found', 'The resource could not be found.')
        with LOCK:
            images = load()
            if len(parts) == 2:
                if method == 'GET':
                    return self.list(images, query)
                if method == 'POST':
                    return self.create(images)
                return self.error(405, 'Method Not Allowed', 'The method is not allowed for this resource.')
            img = images.get(parts[2])
            if img is None or not self.visible(img):
                return self.error(404, 'Not Found', 'No image found with ID %s' % parts[2])
            if len(parts) == 3 and method == 'GET':
                return self.reply(200, img)
            if len(parts) == 3 and method == 'DELETE':
                del images[img['id']]
                save(images)
                try:
                    os.remove(os.path.join(ARGS.dir, 'data', img['id']))
                except FileNotFoundError:
                    pass
                return self.reply(204)
            if parts[3:] == ['file'] and method == 'PUT':
                return self.upload(images, img)
            if parts[3:] == ['file'] and method == 'GET':
                try:
                    with open(os.path.join(ARGS.dir, 'data', img['id']), 'rb') as f:
                        return self.reply(200, f.read(), 'application/octet-stream')
                except FileNotFoundError:
                    return self.reply(204)
            return self.error(405, 'Method Not Allowed', 'The method is not allowed for this resource.')

    def visible(self, img):
        return img.get('owner') == self.project or img.get('visibility') in ('public', 'community')

    def list(self, images, query):
        items = [i for i in images.values() if self.visible(i)]
        for key in ('name', 'status', 'visibility', 'disk_format', 'container_format'):
            if key in query:
                items = [i for i in items if i.get(key) == query[key][0]]
        for tag in query.get('tag', []):
            items = [i for i in items if tag in i.get('tags', [])]
        items.sort(key=lambda i: (i['created_at'], i['id']), reverse=True)
        if 'marker' in query:
            ids = [i['id'] for i in items]
            if query['marker'][0] not in ids:
                return self.error(400, 'Bad Request', 'marker not found')
            items = items[ids.index(query['marker'][0]) + 1:]
        limit = min(int(query.get('limit', ['25'])[0]), 1000)
        out = {'images': items[:limit], 'first': '/v2/images', 'schema': '/v2/schemas/images'}
        if len(items) > limit:
            q = {k: v[0] for k, v in query.items() if k != 'marker'}
            q['marker'] = items[limit - 1]['id']
            out['next'] = '/v2/images?' + urllib.parse.urlencode(q)
        return self.reply(200, out)

    def create(self, images):
        try:
            req = json.loads(self.body() or b'{}')
        except ValueError:
            return self.error(400, 'Bad Request', 'Malformed JSON in request body.')
        iid = req.pop('id', None) or str(uuid.uuid4())
        if iid in images:
            return self.error(409, 'Conflict', 'Image with identifier %s already exists!' % iid)
        t = now()
        img = {'id': iid, 'name': req.pop('name', None), 'status': 'queued',
               'visibility': req.pop('visibility', 'shared'), 'protected': req.pop('protected', False),
               'tags': req.pop('tags', []), 'disk_format': req.pop('disk_format', None),
               'container_format': req.pop('container_format', None),
               'min_disk': req.pop('min_disk', 0), 'min_ram': req.pop('min_ram', 0),
               'size': None, 'virtual_size': None, 'checksum': None, 'os_hash_algo': None,
               'os_hash_value': None, 'owner': self.project, 'created_at': t, 'updated_at': t,
               'self': '/v2/images/' + iid, 'file': '/v2/images/%s/file' % iid,
               'schema': '/v2/schemas/image'}
        img.update({k: v for k, v in req.items() if isinstance(v, str)})  # extra properties
        images[iid] = img
        save(images)
        return self.reply(201, img, headers=[('Location', base_url() + img['self'])])

    def upload(self, images, img):
        if img['status'] != 'queued':
            return self.error(409, 'Conflict', 'Image status transition from %s to saving is not allowed' % img['status'])
        if self.headers.get('Transfer-Encoding', '').lower() == 'chunked':
            data = b''
            while True:
                n = int(self.rfile.readline().strip() or b'0', 16)
                if n == 0:
                    self.rfile.readline()
                    break
                data += self.rfile.read(n)
                self.rfile.readline()
        else:
            data = self.body()
        os.makedirs(os.path.join(ARGS.dir, 'data'), exist_ok=True)
        with open(os.path.join(ARGS.dir, 'data', img['id']), 'wb') as f:
            f.write(data)
        img.update(size=len(data), checksum=hashlib.md5(data).hexdigest(), os_hash_algo='sha512',
                   os_hash_value=hashlib.sha512(data).hexdigest(), status='active', updated_at=now())
        save(images)
        return self.reply(204)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument('--port', type=int, default=29292)
    p.add_argument('--dir', required=True)
    p.add_argument('--keystone', required=True)
    ARGS = p.parse_args()
    os.makedirs(ARGS.dir, exist_ok=True)
    srv = http.server.ThreadingHTTPServer(('127.0.0.1', ARGS.port), Handler)
    srv.daemon_threads = True
    srv.serve_forever()


if __name__ == '__main__':
    main()
