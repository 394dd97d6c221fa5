# SPDX-License-Identifier: GPL-2.0-or-later
"""A private certificate authority made per test with the openssl tool: a CA certificate and
certificates it signs, for servers a test runs on TLS (a sibling, a PostgreSQL cluster) and the
clients that must trust them by that CA alone (<ssl-cafile>, libpq's sslrootcert).
"""

import os
import subprocess


def _run(args):
    subprocess.run(["openssl"] + args, check=True, capture_output=True, timeout=60)


def make_ca(directory, name="ca", cn="rimecast test CA"):
    """A self-signed CA; returns (certificate, key) paths. The certificate is world-readable
    (the server reads it after dropping to nobody)."""
    cert = os.path.join(directory, name + ".crt")
    key = os.path.join(directory, name + ".key")
    _run(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-keyout", key,
          "-out", cert, "-subj", "/CN=" + cn, "-addext", "basicConstraints=critical,CA:TRUE",
          "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
    os.chmod(cert, 0o644)
    return cert, key


def make_leaf(ca, directory, name, san="IP:127.0.0.1,DNS:localhost", cn="localhost"):
    """A server certificate for san signed by ca (make_ca's pair); returns (certificate, key,
    combined PEM: certificate then key, as <ssl-certificate> takes it). The key is 0600."""
    ca_cert, ca_key = ca
    cert = os.path.join(directory, name + ".crt")
    key = os.path.join(directory, name + ".key")
    csr = os.path.join(directory, name + ".csr")
    ext = os.path.join(directory, name + ".ext")
    _run(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
          "-subj", "/CN=" + cn])
    with open(ext, "w") as f:
        f.write("subjectAltName=%s\nbasicConstraints=CA:FALSE\n"
                "extendedKeyUsage=serverAuth\n" % san)
    _run(["x509", "-req", "-in", csr, "-CA", ca_cert, "-CAkey", ca_key, "-CAcreateserial",
          "-days", "2", "-out", cert, "-extfile", ext])
    pem = os.path.join(directory, name + ".pem")
    with open(pem, "wb") as out:
        for part in (cert, key):
            with open(part, "rb") as f:
                out.write(f.read())
    os.chmod(cert, 0o644)
    os.chmod(key, 0o600)
    os.chmod(pem, 0o644)
    return cert, key, pem
