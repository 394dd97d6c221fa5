# SPDX-License-Identifier: GPL-2.0-or-later
"""A stand-in for a running server, for the tests of `rimecast --upgrade`: run by a copy of the
Python interpreter named rimecast, it serves HTTP on a port, writes its pidfile and, told by
SIGUSR2, answers as a server of one kind would:
  nohandler  SIGUSR2 keeps its default action (a version before the hand-over)
  handover   a new process (a fork) takes the socket and the pidfile; the old one writes
             "upgrade: handed over to PID n" to the error log and exits
  fail       writes "upgrade: failed: ..." to the error log and goes on serving
  silent     catches SIGUSR2 and does nothing
usage: rimecast upgrade_fake.py MODE PORT PIDFILE ERRORLOG"""

import os
import select
import signal
import socket
import sys
import time

mode, port, pidfile, errorlog = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
asked = []


def log(level, text):
    with open(errorlog, "a") as f:
        f.write("[%s] %s upgrade/fake %s\n" % (time.strftime("%Y-%m-%d  %H:%M:%S"), level, text))


def write_pidfile():
    with open(pidfile + ".tmp", "w") as f:
        f.write("%d\n" % os.getpid())
    os.rename(pidfile + ".tmp", pidfile)


def serve_forever(lsock, name):
    while True:
        if asked:
            asked.clear()
            if mode == "handover":
                child = os.fork()
                if child == 0:
                    name = "fake-new"
                    write_pidfile()
                    continue
                log("INFO", "upgrade: handed over to PID %d" % child)
                os._exit(0)
            if mode == "fail":
                log("EROR", "upgrade: failed: the new binary exited at start-up (status 1)")
        try:
            ready, _, _ = select.select([lsock], [], [], 0.05)
        except InterruptedError:
            continue
        if ready:
            c, _ = lsock.accept()
            c.settimeout(2)
            try:
                c.recv(4096)
                c.sendall(b"HTTP/1.0 200 OK\r\nServer: %s\r\nContent-Type: application/json\r\n"
                          b"\r\n{}" % name.encode())
            except OSError:
                pass
            c.close()


lsock = socket.socket()
lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lsock.bind(("127.0.0.1", port))
lsock.listen(16)
if mode != "nohandler":
    signal.signal(signal.SIGUSR2, lambda *_: asked.append(1))
write_pidfile()
serve_forever(lsock, "fake-old")
