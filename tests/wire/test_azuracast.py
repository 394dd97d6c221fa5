# SPDX-License-Identifier: GPL-2.0-or-later
"""AzuraCast runs Rimecast as its Icecast (docs/AZURACAST.md).

The config is written exactly as AzuraCast's backend/src/Radio/Frontend/Icecast.php builds it
(ported below with its XML writer: no declaration, the station's settings, Icecast-KH's
elements, /dev/stderr as the error log, ban files, listener URL authentication, a relay), and
the server is started as AzuraCast's supervisord starts it: as the station's user (nobody
here), from the station's directory, `-c icecast.xml`, stdout and stderr into one log. Each
element's effect is checked on the wire, and the three reads of AzuraCast's now-playing
library (AzuraCast/nowplaying, src/Adapter/Icecast.php) are parsed as that library parses
them.
"""

import html
import json
import os
import pwd
import re
import shutil
import signal
import socket
import tempfile
import time
import urllib.parse
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape, quoteattr

import pytest

import adminlib
import formatlib
import httprec
import wirelib
from conftest import SRCDIR, Server, run_dir

pytestmark = pytest.mark.rimecast_only  # Icecast 2.4 does not read KH's config

SOURCE_PW = "src-pw"
ADMIN_PW = "admin-pw"
HOST = "radio.example.com"
STATION = "radio"  # the station's short name: its listen URL through the proxy
MP3_RATE = 8000    # bytes/s of the 64 kbit/s MP3 the sources send


# ---------------------------------------------------------------- AzuraCast's writer

def _element(name, value, indent, out):
    out.append("%s<%s>%s</%s>" % (" " * indent, name, escape(str(value)), name))


def _branch(name, config, indent, out):
    """App\\Xml\\Writer::addBranch: a list repeats the element, '@x' keys are attributes, an
    array with nothing but attributes is an empty element."""
    if isinstance(config, list):
        if not config:  # an empty array: one empty element
            out.append("%s<%s/>" % (" " * indent, name))
        for value in config:
            if isinstance(value, (dict, list)):
                _branch(name, value, indent, out)
            else:
                _element(name, value, indent, out)
        return
    attrs = "".join(" %s=%s" % (k[1:], quoteattr(str(v))) for k, v in config.items()
                    if k.startswith("@"))
    body = [(k, v) for k, v in config.items() if not k.startswith("@")]
    if not body:
        out.append("%s<%s%s/>" % (" " * indent, name, attrs))
        return
    out.append("%s<%s%s>" % (" " * indent, name, attrs))
    for key, value in body:
        if isinstance(value, (dict, list)):
            _branch(key, value, indent + 4, out)
        else:
            _element(key, value, indent + 4, out)
    out.append("%s</%s>" % (" " * indent, name))


def writer_to_string(config):
    """Writer::toString($config, 'icecast', false): 4-space indent, no XML declaration."""
    out = []
    _branch("icecast", config, 0, out)
    return "\n".join(out) + "\n"


def merge(into, extra):
    """Arrays::arrayMergeRecursiveDistinct for the custom config: maps merged, values replaced."""
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge(into[key], value)
        else:
            into[key] = value
    return into


def write_lines(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines))
    os.chmod(path, 0o644)
    return path


def icecast_php_config(st):
    """Icecast::getConfigurationArray for the station st (a dict of its settings)."""
    cd, base = st["config_dir"], st["base_dir"]
    web = base + "/web"
    max_listeners = st.get("max_listeners")
    config = {
        "location": "AzuraCast",
        "admin": "icemaster@localhost",
        "hostname": HOST,
        "limits": {
            "clients": max_listeners * 2 if max_listeners else 2500,
            "max-listeners": max_listeners if max_listeners is not None else -1,
            "sources": len(st["mounts"]),
            "queue-size": 524288,
            "client-timeout": 30,
            "header-timeout": 15,
            "source-timeout": 10,
            "burst-size": 65535,
        },
        "authentication": {
            "source-password": SOURCE_PW,
            "relay-password": "relay-pw",
            "admin-user": "admin",
            "admin-password": ADMIN_PW,
        },
        "listen-socket": {"port": st["port"]},
        "mount": [],
        "fileserve": 1,
        "paths": {
            "basedir": base,
            "logdir": cd,
            "webroot": web,
            "adminroot": base + "/admin",
            "pidfile": cd + "/icecast.pid",
            "alias": [{"@source": "/", "@dest": "/status.xsl"}],
            "ssl-private-key": st["acme_dir"] + "/ssl.key",
            "ssl-certificate": st["acme_dir"] + "/ssl.crt",
            "ssl-allowed-ciphers": "ECDH+AESGCM:DH+AESGCM:ECDH+AES256:DH+AES256:ECDH+AES128:"
                                   "DH+AES:RSA+AESGCM:RSA+AES:!aNULL:!MD5:!DSS",
            "deny-ip": write_lines(cd + "/ip_bans.txt", st.get("banned_ips", [])),
            "deny-agents": write_lines(cd + "/user_agent_bans.txt", st.get("banned_agents", [])),
            "x-forwarded-for": "127.0.0.1",
        },
        "logging": {
            "accesslog": "icecast_access.log",
            "errorlog": "/dev/stderr",
            "loglevel": 3,  # LOGLEVEL_INFO outside production
            "logsize": 10000,
        },
        "security": {"chroot": 0},
    }
    use_listener_auth = bool(st.get("banned_countries") or st.get("allowed_ips"))
    charset = "ISO8859-1" if st.get("charset") == "ISO-8859-1" else "UTF8"
    for m in st["mounts"]:
        mount = {"@type": "normal", "mount-name": m["name"], "charset": charset,
                 "stream-name": st["name"], "listenurl": m["listen_url"]}
        if st.get("max_bitrate"):
            mount["limit-rate"] = st["max_bitrate"] * 1024 + 2500
        mount["stream-description"] = st["description"]
        mount["stream-url"] = st["url"]
        mount["genre"] = st["genre"]
        if not m.get("visible", True):
            mount["hidden"] = 1
        if m.get("intro_path"):  # relative to the webroot, as Path::makeRelative makes it
            mount["intro"] = os.path.relpath(cd + "/" + m["intro_path"], web)
        if m.get("fallback_mount"):
            mount["fallback-mount"] = m["fallback_mount"]
            mount["fallback-override"] = 1
        elif m.get("autodj"):
            mount["fallback-mount"] = "/fallback-[%d].%s" % (m["autodj_bitrate"],
                                                             m.get("autodj_format", "mp3"))
            mount["fallback-override"] = 1
        if m.get("max_listener_duration"):
            mount["max-listener-duration"] = m["max_listener_duration"]
        if m.get("relay_url"):
            u = urllib.parse.urlsplit(m["relay_url"])
            config.setdefault("relay", []).append({k: v for k, v in (
                ("server", u.hostname), ("port", u.port), ("mount", u.path),
                ("local-mount", m["name"])) if v})
        if use_listener_auth:
            mount["authentication"] = [{"@type": "url", "option": [
                {"@name": "listener_add", "@value": st["auth_url"]},
                {"@name": "auth_header", "@value": "icecast-auth-user: 1"}]}]
        config["mount"].append(mount)
    return merge(config, st.get("custom_config", {}))


# ---------------------------------------------------------------- the station

_AUDIO = {}


def audio(name):
    """Encoded once per run (64 kbit/s): the AutoDJ's stream, the fallback files, the intro."""
    if name not in _AUDIO:
        codec, seconds, freq = {"stream": ("mp3", 30, 440), "fallback": ("mp3", 3, 660),
                                "intro": ("mp3", 1, 880), "aac": ("aac", 3, 550)}[name]
        path = os.path.join(tempfile.mkdtemp(dir=run_dir()), "a." + codec)
        _AUDIO[name] = formatlib.encode_file(path, codec, seconds, freq=freq)
    return _AUDIO[name]


def as_station_user():
    """supervisord's user=azuracast: the server runs as the station's user, not root."""
    nobody = pwd.getpwnam("nobody")
    os.setgroups([])
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)


class AzuraStation(Server):
    """A station's frontend as AzuraCast runs it. The station's config directory is the
    server's directory (its cwd, logdir, pidfile, ban files); the Icecast base directory
    (webroot with the fallback files, adminroot) is a directory of its own."""

    def __init__(self, auth_url=None, **station):
        super().__init__()
        nobody = pwd.getpwnam("nobody")
        os.chown(self.dir, nobody.pw_uid, nobody.pw_gid)
        self.base = tempfile.mkdtemp(prefix="icecast-", dir=run_dir())
        os.chmod(self.base, 0o755)
        shutil.copytree(os.path.join(SRCDIR, "web"), self.base + "/web")
        os.symlink(os.path.join(SRCDIR, "admin"), self.base + "/admin")
        for name, data in (("fallback-[64].mp3", audio("fallback")),
                           ("fallback-[64].aac", audio("aac"))):
            with open(self.base + "/web/" + name, "wb") as f:
                f.write(data)
        with open(self.dir + "/intro.mp3", "wb") as f:
            f.write(audio("intro"))
        self.station = dict(
            name="Wire Radio", description="A test station", url="https://example.org/",
            genre="Jazz", config_dir=self.dir, base_dir=self.base, acme_dir=self.dir + "/acme",
            auth_url=auth_url, banned_ips=["192.0.2.66"], banned_agents=["*BadBot*"],
            allowed_ips=["0.0.0.0/0"] if auth_url else [], max_bitrate=192,
            mounts=[dict(name="/radio.mp3", autodj=True, autodj_bitrate=64,
                         intro_path="intro.mp3", max_listener_duration=3600)])
        self.station.update(station)
        self.config_path = self.dir + "/icecast.xml"
        # supervisord: stdout_logfile=<config dir>/icecast.log, redirect_stderr=true
        self.stdout_path = self.stderr_path = self.dir + "/icecast.log"
        self.preexec_fn = as_station_user

    def write_config(self, text=None, **changes):
        self.station.update(changes)
        self.station["port"] = self.cfg["port"]
        for m in self.station["mounts"]:
            m.setdefault("listen_url", "http://%s:%d%s" % (HOST, self.port, m["name"]))
        text = writer_to_string(icecast_php_config(self.station))
        with open(self.config_path + ".tmp", "w") as f:
            f.write(text)
        os.chmod(self.config_path + ".tmp", 0o644)
        os.rename(self.config_path + ".tmp", self.config_path)

    @property
    def error_log_path(self):
        return self.stderr_path  # <errorlog>/dev/stderr</errorlog>

    @property
    def access_log_path(self):
        return self.dir + "/icecast_access.log"

    def admin(self, path):
        return adminlib.request(self, path, auth=("admin", ADMIN_PW))

    def autodj(self, mount="/radio.mp3", rate=MP3_RATE, data=None, **headers):
        """Liquidsoap's output.icecast: a PUT with its ice-* headers, paced at its rate."""
        h = {"Content-Type": "audio/mpeg", "ice-name": "Wire Radio", "ice-public": "1",
             "ice-audio-info": "samplerate=44100;channels=2;bitrate=64", "ice-bitrate": "64"}
        h.update(headers)
        src = wirelib.SourceClient(self.host, self.port, mount, data or audio("stream"),
                                   rate=rate, password=SOURCE_PW, headers=h, loop=True)
        assert src.connect().status == 200, src.response
        src.start()
        wirelib.wait_until(lambda: self.source_stats(mount) is not None, 5, mount + " live")
        return src

    def source_stats(self, mount):
        doc = self.admin("/admin/stats").xml()
        return adminlib.source_elements(doc, mount)


@pytest.fixture
def azuracast():
    """Factory: azuracast(auth_url=..., **station settings) -> a started AzuraStation."""
    started = []

    def factory(start=True, **kw):
        st = AzuraStation(**kw)
        started.append(st)
        if start:
            st.start()
        return st

    yield factory
    problems = []
    for st in started:
        if st.proc is None or st.stopped:
            continue
        alive = st.is_alive()
        code = st.stop()
        if not alive or code != 0:
            problems.append("station server: alive %s, exit %r" % (alive, code))
            print(st.diagnostics())
    for st in started:
        shutil.rmtree(st.base, ignore_errors=True)
        if not problems:
            shutil.rmtree(st.dir, ignore_errors=True)
    if problems:
        pytest.fail("; ".join(problems))


def auth_answer(blocked):
    """AzuraCast's ListenerAuthAction: icecast-auth-user 1, or 0 with a message."""
    def answer(req):
        if req.form.get("ip") in blocked:
            return 200, {"icecast-auth-user": "0", "icecast-auth-message": "geo-blocked"}
        return 200, {"icecast-auth-user": "1"}
    return answer


auth_server = httprec.recorder_fixture("auth_server", auth_answer(()))


class ProxiedListener(wirelib.Listener):
    """A listener as AzuraCast's nginx passes it on (its /listen/<station>/ location and
    proxy_params): HTTP/1.1, Host with the listen path, ?_ic2=1, the forwarded headers."""

    def __init__(self, st, mount, client_ip, agent="VLC/3.0.20 LibVLC/3.0.20", bind=None,
                 icy=True):
        super().__init__(st.host, st.port, mount + "?_ic2=1")
        self.client_ip, self.agent, self.bind, self.icy = client_ip, agent, bind, icy

    def request_bytes(self):
        lines = ["GET %s HTTP/1.1" % self.mount,
                 "Host: %s/listen/%s" % (HOST, STATION),
                 "Connection: close",
                 "X-Real-IP: 127.0.0.1",
                 "X-Forwarded-For: %s" % self.client_ip,
                 "X-Forwarded-Proto: https",
                 "X-Forwarded-Ssl: on",
                 "X-Forwarded-Port: 443",
                 "User-Agent: %s" % self.agent] + (["Icy-MetaData: 1"] if self.icy else [])
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def open(self, timeout=5.0, start=True):
        if self.bind is None:
            return super().open(timeout, start)
        # a peer that is not the trusted proxy: another loopback address
        self.sock = socket.create_connection((self.host, self.port), timeout,
                                             source_address=(self.bind, 0))
        self.sock.sendall(self.request_bytes())
        self.response, rest = wirelib.read_head(self.sock, timeout)
        if self.response is not None:
            self._add(rest)
            if start:
                self.start()
        return self.response


def listen(st, mount, client_ip, **kw):
    lis = ProxiedListener(st, mount, client_ip, **kw)
    lis.open()
    return lis


def status_of(st, mount, client_ip, **kw):
    lis = listen(st, mount, client_ip, **kw)
    lis.close()
    return lis.status


# ---------------------------------------------------------------- the now-playing library

def simple_xml(payload):
    """AdapterAbstract::getSimpleXml: entities decoded, stray & escaped, then parsed."""
    text = html.unescape(payload)
    text = re.sub(r"&(?!#?[a-z0-9]+;)", "&amp;", text)
    return ET.fromstring(text.encode("utf-8"))


def current_song(text, title, artist, album):
    """NowPlaying\\Result\\CurrentSong: the text from artist and title, or artist and title
    from the text split at its first " - "."""
    def clean(v):
        return html.unescape(v or "").strip(" \t\n\r\0\x0b-")
    text, title, artist, album = clean(text), clean(title), clean(artist), clean(album)
    if not text and (title or artist):
        text = " - ".join(x for x in (artist, title) if x)
    if text and (not title or not artist):
        parts = text.split(" - ")
        if len(parts) >= 2:
            artist = parts.pop(0)
        title = " - ".join(parts)
    return {"text": text, "title": title, "artist": artist, "album": album}


def np_xml(st, mount):
    """Icecast::processXmlNowPlaying on GET /admin/stats (admin credentials)."""
    r = st.admin("/admin/stats")
    assert r.status == 200
    rows = [s for s in simple_xml(r.text).findall("source") if s.get("mount") == mount]
    if not rows:
        return None
    row = rows[0]

    def text(name):
        return row.findtext(name) or ""

    def number(name):
        m = re.match(r"\s*-?\d+", text(name))
        return int(m.group()) if m else 0

    bitrate = max(number("audio_bitrate"), number("bitrate"))
    return dict(current_song("", text("title"), text("artist"), text("album")),
                bitrate=bitrate or None, format=text("server_type"),
                listeners=number("listeners"))


def np_clients(st, mount):
    """Icecast::getClientsAsync on GET /admin/listclients?mount=."""
    r = st.admin("/admin/listclients?" + urllib.parse.urlencode({"mount": mount}))
    assert r.status == 200
    doc = simple_xml(r.text)
    source = doc.find("source")
    clients = [{"id": l.findtext("ID"), "ip": l.findtext("IP"),
                "agent": l.findtext("UserAgent"), "connected": int(l.findtext("Connected"))}
               for l in source.findall("listener")]
    return source, clients


def np_json(st, mount):
    """Icecast::processJsonNowPlaying on GET /status-json.xsl?mount= (no credentials)."""
    r = adminlib.request(st, "/status-json.xsl?" + urllib.parse.urlencode({"mount": mount}))
    assert r.status == 200
    payload = r.text.replace('"title": -', '"title": " - "')
    sources = json.loads(payload)["icestats"]["source"]
    rows = sources if isinstance(sources, list) else [sources]
    by_mount = {}
    for row in rows:
        song = current_song(row.get("yp_currently_playing", ""), row.get("title", ""),
                            row.get("artist", ""), row.get("album", ""))
        by_mount[urllib.parse.urlsplit(row["listenurl"]).path] = dict(
            song, yp_currently_playing=row.get("yp_currently_playing"),
            format=row["server_type"],
            bitrate=int(row.get("audio_bitrate") or row.get("bitrate") or 0),
            listeners=int(row["listeners"]))
    return by_mount


def liquidsoap_metadata(st, mount, song):
    """Liquidsoap's title update: /admin/metadata with the source's credentials."""
    q = urllib.parse.urlencode({"mode": "updinfo", "mount": mount, "charset": "UTF-8",
                                "song": song})
    r = adminlib.request(st, "/admin/metadata?" + q, auth=("source", SOURCE_PW))
    assert r.status == 200, r.body


def access_lines(st):
    return [l for l in st.access_log().splitlines() if l.strip()]


# ---------------------------------------------------------------- tests

def test_the_config_azuracast_writes_starts_with_its_logs_and_pidfile(azuracast, auth_server):
    auth = auth_server()
    st = azuracast(auth_url=auth.url("/api/internal/1/listener-auth/key"),
                   mounts=[dict(name="/radio.mp3", autodj=True, autodj_bitrate=64),
                           dict(name="/relay.mp3", relay_url="http://127.0.0.1:9/live.mp3",
                                visible=False)])
    text = open(st.config_path).read()
    for kh in ("<x-forwarded-for>127.0.0.1</x-forwarded-for>", "<limit-rate>199108</limit-rate>",
               "<listenurl>", "<errorlog>/dev/stderr</errorlog>", "<max-listeners>-1",
               '<alias source="/" dest="/status.xsl"/>', "<option name=\"auth_header\""):
        assert kh in text
    assert not text.startswith("<?xml")
    # the error log is the process's stderr: supervisord's icecast.log
    st.wait_log("started with")
    log = st.error_log()
    assert "unknown element" not in log and "not supported" not in log, log
    assert not os.path.exists(os.path.join(st.dir, "error.log"))
    with open(os.path.join(st.dir, "icecast.pid")) as f:
        assert int(f.read().strip()) == st.pid
    assert os.stat(os.path.join(st.dir, "icecast.pid")).st_uid == pwd.getpwnam("nobody").pw_uid
    assert st.admin("/admin/stats").xml().find("config-warnings") is None
    # <alias source="/" dest="/status.xsl"/>: the front page is the status page
    r = adminlib.request(st, "/")
    assert r.status == 200 and "html" in r.header("Content-Type")


def test_listener_through_the_proxy_is_authenticated_listed_and_logged_by_its_address(
        azuracast, auth_server):
    auth = auth_server(auth_answer({"198.51.100.7"}))
    st = azuracast(auth_url=auth.url("/api/internal/1/listener-auth/key"))
    src = st.autodj()
    lis = listen(st, "/radio.mp3", "203.0.113.9")
    assert lis.status == 200, lis.response
    lis.wait_bytes(16384, 5)
    # AzuraCast's listener auth was asked about the forwarded address
    form = auth.wait("listener_add")[0].form
    assert form["ip"] == "203.0.113.9" and form["agent"].startswith("VLC/")
    assert form["mount"].startswith("/radio.mp3")
    _, clients = np_clients(st, "/radio.mp3")
    assert [c["ip"] for c in clients] == ["203.0.113.9"]
    # the auth server refuses a geo-blocked address, named by the proxy
    refused = listen(st, "/radio.mp3", "198.51.100.7")
    assert refused.status == 403
    refused.close()
    # a peer that is not the proxy is not believed: its own address is the listener's
    other = listen(st, "/radio.mp3", "203.0.113.10", bind="127.0.0.2")
    assert other.status == 200
    other.wait_bytes(4096, 5)
    _, clients = np_clients(st, "/radio.mp3")
    assert sorted(c["ip"] for c in clients) == ["127.0.0.2", "203.0.113.9"]
    lis.close()
    other.close()
    wirelib.wait_until(lambda: sum(" /radio.mp3" in l for l in access_lines(st)) >= 3, 5,
                       "access log lines")
    ips = [l.split()[0] for l in access_lines(st) if " /radio.mp3" in l]
    assert sorted(ips) == ["127.0.0.2", "198.51.100.7", "203.0.113.9"]
    src.stop()


def test_banned_agent_and_address_are_refused(azuracast):
    st = azuracast()
    src = st.autodj()
    bot = listen(st, "/radio.mp3", "203.0.113.20", agent="Mozilla/5.0 (BadBot 2.1)")
    assert bot.status == 403
    banned = listen(st, "/radio.mp3", "192.0.2.66")  # in ip_bans.txt, behind the proxy
    assert banned.status == 403
    ok = listen(st, "/radio.mp3", "192.0.2.67")
    assert ok.status == 200
    ok.wait_bytes(4096, 5)
    # AzuraCast rewrites the ban files; they are read again without a reload
    write_lines(st.dir + "/ip_bans.txt", ["192.0.2.66", "192.0.2.68"])
    wirelib.wait_until(lambda: status_of(st, "/radio.mp3", "192.0.2.68") == 403, 5,
                       "new ban in force")
    for lis in (bot, banned, ok):
        lis.close()
    src.stop()


def test_a_source_above_limit_rate_is_read_no_faster_as_icecast_kh_does(azuracast):
    # AzuraCast's station maximum bit rate 32 kbit/s: limit-rate 32 * 1024 + 2500 = 35268 bit/s
    st = azuracast(max_bitrate=32)
    limit = (32 * 1024 + 2500) // 8
    assert "<limit-rate>35268</limit-rate>" in open(st.config_path).read()
    lis = listen(st, "/radio.mp3", "203.0.113.30")
    src = st.autodj(rate=64 * 1024)  # a 64 kbit/s stream sent eight times as fast
    t0 = time.monotonic()
    time.sleep(3)  # a window to measure: how much the server took meanwhile

    def read_bytes():
        return int(st.source_stats("/radio.mp3").findtext("total_bytes_read"))
    first = read_bytes()
    elapsed = time.monotonic() - t0
    # at most the rate since it connected plus the two seconds it may send at once
    assert first <= limit * (elapsed + 2) + 4096, (first, elapsed)
    assert src.sent > 2 * first  # the rest waits in TCP: the sender is slowed, not dropped
    time.sleep(2)  # the next window
    second = read_bytes()
    rate = (second - first) / 2.0
    assert 0.5 * limit < rate < 1.3 * limit, rate  # still read, at the limit
    assert src.error is None and st.source_stats("/radio.mp3") is not None
    assert lis.received > 0 and not lis.closed
    st.wait_log("sends faster than its limit-rate (35264 bit/s): read no faster")
    lis.close()
    src.stop()


def test_a_source_within_limit_rate_is_read_as_it_sends(azuracast):
    st = azuracast(max_bitrate=128)  # 133572 bit/s: the 64 kbit/s AutoDJ is well within
    src = st.autodj()
    src.wait_sent(4 * MP3_RATE, 10)  # past the two seconds a source may send at once
    sent = src.sent
    wirelib.wait_until(lambda: int(st.source_stats("/radio.mp3").findtext("total_bytes_read"))
                       >= sent, 5, "the server to read what the source sent")
    assert "limit-rate" not in st.error_log()
    src.stop()


def test_listenurl_is_published_in_stats_status_json_hls_and_yp(azuracast):
    directory = httprec.Recorder(lambda req: (200, {"YPResponse": "1", "SID": "s1"}))
    try:
        st = azuracast(
            mounts=[dict(name="/radio.mp3", autodj=True, autodj_bitrate=64,
                         listen_url="https://%s/listen/%s/radio.mp3" % (HOST, STATION))],
            custom_config={"directory": {"yp-url": directory.url("/cgi"),
                                         "yp-url-timeout": 2, "add-delay": 0}})
        src = st.autodj()
        want = "https://%s/listen/%s/radio.mp3" % (HOST, STATION)
        assert st.source_stats("/radio.mp3").findtext("listenurl") == want
        row = adminlib.request(st, "/status-json.xsl").json()["icestats"]["source"][0]
        assert row["listenurl"] == want
        assert row["hls_url"] == want + "/hls.m3u8"
        assert directory.wait("add")[0].form["listenurl"] == want
        src.stop()
    finally:
        directory.close()


def test_the_now_playing_library_reads_what_it_needs(azuracast):
    st = azuracast()
    src = st.autodj()
    liquidsoap_metadata(st, "/radio.mp3", "Simon & Garfunkel - The Boxer")
    lis = listen(st, "/radio.mp3", "203.0.113.40")
    assert lis.status == 200
    # the bit rate measured from the frames (audio_bitrate, bit/s) is there after a second
    wirelib.wait_until(lambda: (np_xml(st, "/radio.mp3") or {}).get("listeners") == 1 and
                       st.source_stats("/radio.mp3").findtext("audio_bitrate"), 5,
                       "one listener, and the measured bit rate, in the stats")
    # 1. /admin/stats; the library's bit rate is the larger of audio_bitrate (bit/s) and
    # bitrate (kbit/s): AzuraCast does not use it
    np = np_xml(st, "/radio.mp3")
    assert np == {"text": "Simon & Garfunkel - The Boxer", "title": "The Boxer",
                  "artist": "Simon & Garfunkel", "album": "", "bitrate": 64000,
                  "format": "audio/mpeg", "listeners": 1}
    assert np_xml(st, "/nothing.mp3") is None
    # 2. /admin/listclients?mount=: <listeners> lower-case as Icecast-KH writes it (and
    # Icecast 2.4's <Listeners>), each listener's ID, IP, UserAgent, Connected
    source, clients = np_clients(st, "/radio.mp3")
    assert source.get("mount") == "/radio.mp3"
    assert source.findtext("listeners") == "1" and source.findtext("Listeners") == "1"
    assert len(clients) == 1
    c = clients[0]
    assert c["ip"] == "203.0.113.40" and c["agent"] == "VLC/3.0.20 LibVLC/3.0.20"
    assert int(c["id"]) > 0 and 0 <= c["connected"] < 60
    # 3. /status-json.xsl?mount=: yp_currently_playing, and listenurl's path names the mount
    js = np_json(st, "/radio.mp3")
    assert js == {"/radio.mp3": {"text": "Simon & Garfunkel - The Boxer", "title": "The Boxer",
                                 "artist": "Simon & Garfunkel", "album": "",
                                 "yp_currently_playing": "Simon & Garfunkel - The Boxer",
                                 "format": "audio/mpeg", "bitrate": 64000, "listeners": 1}}
    lis.close()
    src.stop()


def test_sighup_rereads_the_config_azuracast_rewrites(azuracast, auth_server):
    auth = auth_server()
    st = azuracast(auth_url=auth.url("/api/internal/1/listener-auth/key"))
    src = st.autodj()
    pid = st.pid
    first = listen(st, "/radio.mp3", "203.0.113.50")
    assert first.status == 200
    auth.wait("listener_add")
    # the station drops its listener rules and gets a custom listen URL; AzuraCast writes the
    # config again and has supervisord send SIGHUP
    st.station["allowed_ips"] = []
    st.station["mounts"][0]["listen_url"] = "https://cdn.example.net/wire.mp3"
    st.write_config()
    st.send_signal(signal.SIGHUP)
    wirelib.wait_until(lambda: st.source_stats("/radio.mp3").findtext("listenurl") ==
                       "https://cdn.example.net/wire.mp3", 5, "the new listen URL")
    second = listen(st, "/radio.mp3", "203.0.113.51")
    assert second.status == 200
    second.wait_bytes(4096, 5)
    assert len(auth.of("listener_add")) == 1  # no longer asked
    assert st.pid == pid and st.is_alive() and not first.closed  # same process, none dropped
    st.wait_log("reload")
    for lis in (first, second):
        lis.close()
    src.stop()


def test_relay_fallback_file_and_intro(azuracast, server):
    upstream = server()
    up = upstream.source("/live.mp3", audio("stream"), rate=MP3_RATE, loop=True,
                         headers={"Content-Type": "audio/mpeg"})
    assert up.connect().status == 200
    up.start()
    st = azuracast(mounts=[
        dict(name="/radio.mp3", autodj=True, autodj_bitrate=64, intro_path="intro.mp3"),
        dict(name="/relay.mp3", relay_url="http://127.0.0.1:%d/live.mp3" % upstream.port,
             visible=False)])
    # the relay: pulled from the upstream, hidden from the public pages, listed to the admin
    wirelib.wait_until(lambda: st.source_stats("/relay.mp3") is not None, 10, "relay live")
    relayed = listen(st, "/relay.mp3", "203.0.113.60")
    assert relayed.status == 200
    relayed.wait_bytes(8192, 5)
    public = [s["listenurl"] for s in
              adminlib.request(st, "/status-json.xsl").json()["icestats"]["source"]]
    assert not any(u.endswith("/relay.mp3") for u in public)
    relayed.close()
    # no AutoDJ yet: the listener gets the fallback file of the webroot, brackets and all
    fallback = audio("fallback")
    lis = listen(st, "/radio.mp3", "203.0.113.61")
    assert lis.status == 200
    lis.wait_bytes(8192, 10)
    assert lis.snapshot()[:1024] in fallback + fallback  # the file, looped
    lis.close()
    # with the AutoDJ on the air: the intro from the station's directory, then the stream
    src = st.autodj()
    intro = formatlib.mp3_audio(audio("intro"))  # its frames, as an ad's (no tags)
    lis = listen(st, "/radio.mp3", "203.0.113.62", icy=False)
    assert lis.status == 200
    lis.wait_bytes(len(intro) + 8192, 5)
    assert lis.snapshot()[:len(intro)] == intro
    lis.close()
    src.stop()
    up.stop()


def test_the_station_maximum_listeners_counts_every_mount(azuracast):
    st = azuracast(max_listeners=2, mounts=[
        dict(name="/radio.mp3", autodj=True, autodj_bitrate=64),
        dict(name="/low.mp3")])
    assert "<max-listeners>2</max-listeners>" in open(st.config_path).read()
    a, b = st.autodj(), st.autodj("/low.mp3")
    one = listen(st, "/radio.mp3", "203.0.113.70")
    two = listen(st, "/low.mp3", "203.0.113.71")
    assert one.status == 200 and two.status == 200
    three = listen(st, "/radio.mp3", "203.0.113.72")
    assert three.status == 403
    three.close()
    one.close()
    wirelib.wait_until(lambda: status_of(st, "/radio.mp3", "203.0.113.73") == 200, 5,
                       "a place free again")
    two.close()
    a.stop()
    b.stop()


def test_an_aac_fallback_file_plays_at_the_rate_its_name_gives(azuracast):
    # an AAC AutoDJ at 64 kbit/s: AzuraCast names the fallback /fallback-[64].aac; before any
    # source connected only the name says the file's rate (ADTS headers name none)
    st = azuracast(mounts=[dict(name="/radio.aac", autodj=True, autodj_bitrate=64,
                                autodj_format="aac")])
    assert "<fallback-mount>/fallback-[64].aac</fallback-mount>" in open(st.config_path).read()
    lis = listen(st, "/radio.aac", "203.0.113.80")
    assert lis.status == 200
    lis.wait_bytes(4096, 5)
    t0, first = time.monotonic(), lis.received
    time.sleep(3)  # a window to measure the pace in
    rate = (lis.received - first) / (time.monotonic() - t0)
    assert 0.6 * 8000 < rate < 1.4 * 8000, rate  # 64 kbit/s, not the default 128
    assert lis.snapshot()[:1024] in audio("aac") + audio("aac")
    st.wait_log("playing file /fallback-[64].aac as a fallback at 64000 bit/s")
    lis.close()
