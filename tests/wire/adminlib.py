# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers for the admin, status page, file, metrics and event tests.

Owns: a station fixture builder (a server with a private webroot and
adminroot made of small test stylesheets, and paced sources with ice-*
headers), one-shot and keep-alive HTTP requests, XML/JSON accessors, a strict
Prometheus text-format parser and a server-sent events reader. Knows nothing
about starting the daemon (conftest.py) or the stream protocols (wirelib.py).
"""

import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET

import wirelib
from conftest import ADMIN_PASSWORD, ADMIN_USER, SOURCE_PASSWORD

EVIL = '<script>alert("x")</script> & \'q\''

IDENTITY_XSL = """<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="xml" indent="no"/>
<xsl:template match="@*|node()"><xsl:copy><xsl:apply-templates select="@*|node()"/></xsl:copy></xsl:template>
</xsl:stylesheet>
"""

# A page that prints every source's mount and title, as an HTML view would.
HTML_XSL = """<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="html" encoding="UTF-8"/>
<xsl:template match="/"><html><body><h1>%s</h1>
<xsl:for-each select="//source"><p class="m"><xsl:value-of select="@mount"/>|<xsl:value-of select="title"/></p></xsl:for-each>
<xsl:for-each select="//listener"><p class="l"><xsl:value-of select="ID"/>|<xsl:value-of select="UserAgent"/></p></xsl:for-each>
<xsl:if test="/iceresponse"><p class="r"><xsl:value-of select="/iceresponse/message"/></p></xsl:if>
</body></html></xsl:template>
</xsl:stylesheet>
"""

TEXT_XSL = """<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="text" media-type="application/x-test" encoding="UTF-8"/>
<xsl:template match="/">server=<xsl:value-of select="/icestats/server_id"/>;sources=<xsl:value-of select="count(/icestats/source)"/></xsl:template>
</xsl:stylesheet>
"""


def make_dir():
    d = tempfile.mkdtemp(prefix="wire-web-")
    os.chmod(d, 0o755)
    return d


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = text.encode() if isinstance(text, str) else text
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)
    os.chmod(os.path.dirname(path), 0o755)


def make_webroot():
    """A webroot with a few files and test stylesheets (no status-json.xsl)."""
    d = make_dir()
    write(os.path.join(d, "copy.xsl"), IDENTITY_XSL)
    write(os.path.join(d, "page.xsl"), HTML_XSL % "public")
    write(os.path.join(d, "text.xsl"), TEXT_XSL)
    write(os.path.join(d, "hello.txt"), "hello world\n")
    write(os.path.join(d, "style.css"), "body { color: red }\n")
    write(os.path.join(d, "app.js"), "console.log(1);\n")
    write(os.path.join(d, "data.unknownext"), b"\x00\x01\x02")
    write(os.path.join(d, "sub", "index.html"), "<p>sub index</p>\n")
    write(os.path.join(d, "digits.bin"), bytes(range(256)) * 8)
    os.symlink("/etc/passwd", os.path.join(d, "passwd-link"))
    os.symlink("/etc", os.path.join(d, "etc-link"))
    return d


def make_adminroot():
    d = make_dir()
    for name in ("stats", "listmounts", "listclients", "moveclients", "response",
                 "updatemetadata", "streamlist"):
        write(os.path.join(d, name + ".xsl"), HTML_XSL % ("admin-" + name))
    return d


def cleanup(*dirs):
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------- HTTP

class Reply:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.body = body

    def header(self, name, default=None):
        return self.headers.get(name.lower(), default)

    @property
    def text(self):
        return self.body.decode("utf-8")

    def xml(self):
        return ET.fromstring(self.body)

    def json(self):
        return json.loads(self.body.decode("utf-8"))


def auth_header(user=ADMIN_USER, password=ADMIN_PASSWORD):
    return {"Authorization": wirelib.basic_auth(user, password)}


def request(srv, path, method="GET", headers=None, auth=None, timeout=10):
    """One request on its own connection. auth: (user, password) or None."""
    h = dict(headers or {})
    if auth:
        h.update(auth_header(*auth))
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=timeout)
    try:
        conn.request(method, path, headers=h)
        r = conn.getresponse()
        body = r.read()
        return Reply(r.status, r.getheaders(), body)
    finally:
        conn.close()


def admin(srv, path, **kw):
    kw.setdefault("auth", (ADMIN_USER, ADMIN_PASSWORD))
    return request(srv, path, **kw)


def raw(srv, data, timeout=5):
    """Raw bytes in, (Response head or None, body until close) out."""
    return wirelib.simple_request(srv.host, srv.port, data, timeout)


# ---------------------------------------------------------------- station

class Station:
    """A server with a private webroot/adminroot and sources on chosen mounts."""

    def __init__(self, server, live=(), web=True, **cfg):
        self.webroot = make_webroot() if web else make_dir()
        self.adminroot = make_adminroot()
        self.srv = server(webroot=self.webroot, adminroot=self.adminroot, **cfg)
        self.sources = {}
        self.procs = []
        for m in live:
            self.add_source(m)

    def add_source(self, mount, name="Station " + EVIL, rate=16 * 1024, **kw):
        headers = {"ice-name": name, "ice-description": "about " + EVIL,
                   "ice-genre": "Rock & Roll", "ice-url": "http://example.org/?a=1&b=<2>",
                   "ice-bitrate": "128", "ice-public": "1",
                   "ice-audio-info": "bitrate=128;channels=2;samplerate=44100"}
        headers.update(kw.pop("headers", {}))
        data = wirelib.make_data(1 << 20, seed=len(self.sources) + 7)
        src = self.srv.source(mount, data, rate=rate, loop=True, headers=headers, **kw)
        assert src.connect().status == 200, src.response
        src.start()
        src.wait_sent(4096, 5)
        self.sources[mount] = src
        name = urllib.parse.unquote(mount)
        wirelib.wait_until(lambda: name in self.mounts(), 5, "mount %s live" % name)
        return src

    def mounts(self):
        r = admin(self.srv, "/admin/listmounts")
        return [s.get("mount") for s in r.xml().findall("source")]

    def add_ffmpeg_ogg(self, mount):
        """A real Ogg Vorbis source: ffmpeg encoding a sine wave in real time."""
        url = "icecast://source:%s@%s:%d%s" % (SOURCE_PASSWORD, self.srv.host, self.srv.port,
                                                mount)
        p = subprocess.Popen(["ffmpeg", "-hide_banner", "-loglevel", "error", "-re", "-f",
                              "lavfi", "-i", "sine=f=440", "-c:a", "libvorbis",
                              "-content_type", "application/ogg", "-ice_name", EVIL,
                              "-f", "ogg", url],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        self.procs.append(p)
        wirelib.wait_until(lambda: mount in self.mounts(), 10, "ffmpeg on %s" % mount)
        return p

    def raw_listener(self, mount, agent):
        """A listener with a chosen User-Agent; returns the open socket after the head."""
        s = wirelib.connect(self.srv.host, self.srv.port, 5)
        s.sendall(("GET %s HTTP/1.0\r\nUser-Agent: %s\r\n\r\n" % (mount, agent)).encode())
        resp, _ = wirelib.read_head(s, 5)
        assert resp is not None and resp.status == 200
        return s

    def close(self):
        for s in self.sources.values():
            s.stop()
        for p in self.procs:
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        cleanup(self.webroot, self.adminroot)


def source_elements(doc, mount):
    for s in doc.findall("source"):
        if s.get("mount") == mount:
            return s
    return None


def wait_stat(srv, mount, key, want, timeout=5):
    def check():
        doc = admin(srv, "/admin/stats").xml()
        s = source_elements(doc, mount)
        return s is not None and s.findtext(key) == want
    wirelib.wait_until(check, timeout, "%s %s == %r" % (mount, key, want))


# ---------------------------------------------------------------- Prometheus

METRIC_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\\\|\\"|\\n)*)"'
SAMPLE_RE = re.compile(r"^(%s)(?:\{((?:%s)(?:,%s)*)?,?\})? (\S+)(?: -?\d+)?$"
                       % (METRIC_NAME, LABEL, LABEL))
LABEL_RE = re.compile(LABEL)


def unescape_label(v):
    out, i = [], 0
    while i < len(v):
        if v[i] == "\\":
            nxt = v[i + 1]
            out.append({"\\": "\\", '"': '"', "n": "\n"}[nxt])
            i += 2
        else:
            out.append(v[i])
            i += 1
    return "".join(out)


def parse_prometheus(text):
    """Strict parser of the text exposition format 0.0.4.

    Returns {family: {"type": t, "help": h, "samples": [(name, labels, value)]}}.
    Raises AssertionError on anything malformed."""
    assert text.endswith("\n"), "exposition must end with a newline"
    families, current = {}, None
    for no, line in enumerate(text.split("\n")[:-1], 1):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            assert len(parts) == 4 and re.fullmatch(METRIC_NAME, parts[2]), "line %d: %r" % (no, line)
            fam = families.setdefault(parts[2], {"type": None, "help": None, "samples": []})
            if parts[1] == "TYPE":
                assert fam["type"] is None, "line %d: second TYPE" % no
                assert not fam["samples"], "line %d: TYPE after samples" % no
                assert parts[3] in ("counter", "gauge", "histogram", "summary", "untyped")
                fam["type"] = parts[3]
            else:
                fam["help"] = parts[3]
            current = parts[2]
            continue
        assert line and not line.startswith("#"), "line %d: unexpected %r" % (no, line)
        m = SAMPLE_RE.match(line)
        assert m, "line %d: bad sample %r" % (no, line)
        name = m.group(1)
        labels = {k: unescape_label(v) for k, v in LABEL_RE.findall(m.group(2) or "")}
        value = float(m.group(m.lastindex))
        assert name == current, "line %d: sample %s outside its family %s" % (no, name, current)
        families[name]["samples"].append((name, labels, value))
    for name, fam in families.items():
        assert fam["type"], "family %s without TYPE" % name
        if fam["type"] == "counter":
            assert name.endswith("_total"), "counter %s without _total" % name
    return families


def family_sum(fams, name):
    """The sum of a family's samples (e.g. rimecast_listeners over its mounts: the server's
    listeners); 0 when it has none."""
    return sum(v for _, _, v in fams[name]["samples"])


# ---------------------------------------------------------------- SSE

class EventStream:
    """Reads a text/event-stream response in a thread; .events is a list of dicts."""

    def __init__(self, srv, headers=None, auth=(ADMIN_USER, ADMIN_PASSWORD)):
        self.sock = wirelib.connect(srv.host, srv.port, 5)
        lines = ["GET /admin/events HTTP/1.1", "Host: %s:%d" % (srv.host, srv.port),
                 "Accept: text/event-stream"]
        if auth:
            lines.append("Authorization: " + wirelib.basic_auth(*auth))
        for k, v in (headers or {}).items():
            lines.append("%s: %s" % (k, v))
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.response, rest = wirelib.read_head(self.sock, 5)
        self.raw = bytearray(rest)
        self.events = []
        self.comments = []
        self.lock = threading.Lock()
        self._stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        if self.response is not None and self.response.status == 200:
            self._parse()
            self.thread.start()

    def _run(self):
        try:
            self.sock.settimeout(0.2)
        except OSError:
            return
        while not self._stop:
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                break
            if not chunk:
                break
            with self.lock:
                self.raw += chunk
                self._parse()

    def _parse(self):
        while b"\n\n" in self.raw:
            block, _, rest = bytes(self.raw).partition(b"\n\n")
            self.raw = bytearray(rest)
            ev = {}
            for line in block.decode("utf-8").split("\n"):
                if line.startswith(":"):
                    self.comments.append(line[1:].strip())
                    continue
                k, _, v = line.partition(":")
                ev[k] = v[1:] if v.startswith(" ") else v
            if "data" in ev:
                ev["json"] = json.loads(ev["data"])
                self.events.append(ev)

    def wait_for(self, pred, timeout=5, what="event"):
        def find():
            with self.lock:
                for ev in self.events:
                    if pred(ev["json"]):
                        return ev
            return None
        return wirelib.wait_until(find, timeout, what)

    def close(self):
        self._stop = True
        try:
            self.sock.close()
        except OSError:
            pass
        if self.thread.is_alive():
            self.thread.join(2)


def wait(cond, timeout=5, what="condition"):
    return wirelib.wait_until(cond, timeout, what)


def now():
    return time.time()
