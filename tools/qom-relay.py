#!/usr/bin/env python3
"""Let a tools/vm guest read and set its own vrnic's fault-* properties.

usage: qom-relay.py QMP_SOCKET DIR

tools/vm --qmp starts one relay per vrnic node, next to QEMU's QMP monitor
(QMP_SOCKET). DIR is the node's directory shared with the guest
(/vrnic-out there). The guest writes a request to DIR/qom.req, one command
per line:

    get fault-drop-ppm
    set fault-drop-ppm 0

and the relay answers in DIR/qom.rep, one line per command it ran:
"ok VALUE" for get, "ok" for set, or "error MESSAGE" (QEMU's, e.g. a value
out of range), after which the rest of the request is not run. Both files
appear whole (written aside, then renamed). Only properties named fault-*
of the node's own vrnic are reachable: the guest gets the knobs a user has
in the monitor, nothing else of QEMU. The relay ends when QEMU closes the
monitor.
"""
import json
import os
import re
import socket
import stat
import sys
import time

POLL_S = 0.1
MAX_REQUEST = 4096
PROP = re.compile(r"fault-[a-z]+(-[a-z]+)*")
NUMBER = re.compile(r"[0-9]+")


class Qmp:
    def __init__(self, path):
        deadline = time.monotonic() + 30
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    sys.exit(f"qom-relay: no QMP monitor at {path}")
                time.sleep(0.1)
        self.rfile = self.sock.makefile("r")
        self.reply()                        # the greeting
        self.run("qmp_capabilities")

    def reply(self):
        """The next reply, skipping asynchronous events."""
        while True:
            line = self.rfile.readline()
            if not line:
                raise EOFError
            msg = json.loads(line)
            if "event" not in msg:
                return msg

    def run(self, cmd, **args):
        """Run a command; returns (True, result) or (False, error text)."""
        self.sock.sendall(json.dumps({"execute": cmd,
                                      "arguments": args}).encode() + b"\n")
        msg = self.reply()
        if "error" in msg:
            return False, msg["error"].get("desc", "failed")
        return True, msg.get("return")


def find_vrnic(qmp):
    for parent in ("/machine/peripheral", "/machine/peripheral-anon"):
        ok, children = qmp.run("qom-list", path=parent)
        for child in children if ok else []:
            if child["type"] == "child<vrnic>":
                return f"{parent}/{child['name']}"
    sys.exit("qom-relay: the VM has no vrnic")


def serve(qmp, dev, words):
    """One request line -> (ok, reply line); a failure ends the request."""
    usage = "error expected 'get fault-NAME' or 'set fault-NAME VALUE'"
    if len(words) < 2 or not PROP.fullmatch(words[1]):
        return False, usage
    if words[0] == "get" and len(words) == 2:
        ok, val = qmp.run("qom-get", path=dev, property=words[1])
        return ok, f"ok {val}" if ok else f"error {val}"
    if words[0] == "set" and len(words) == 3:
        # Numbers go as JSON numbers (the ppm, us and seed properties),
        # anything else as a string (fault-dir); QEMU checks both.
        val = int(words[2]) if NUMBER.fullmatch(words[2]) else words[2]
        ok, err = qmp.run("qom-set", path=dev, property=words[1], value=val)
        return ok, "ok" if ok else f"error {err}"
    return False, usage


def take_request(path):
    """The request's text, removed from DIR; None if there is none.

    DIR is writable by the guest: follow no symlink it may have planted
    and read only a regular file, at most MAX_REQUEST bytes of it.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError:                         # a symlink, a FIFO, ...
        try:
            os.unlink(path)
        except OSError:
            return None                     # e.g. a directory: ignored
        return ""
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_REQUEST) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    os.unlink(path)
    return data.decode(errors="replace")


def put_reply(path, lines):
    tmp = path + ".tmp"
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.rename(tmp, path)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2])
    qmp = Qmp(sys.argv[1])
    dev = find_vrnic(qmp)
    req = os.path.join(sys.argv[2], "qom.req")
    rep = os.path.join(sys.argv[2], "qom.rep")
    try:
        while True:
            text = take_request(req)
            if text is None:
                qmp.run("query-status")     # notices QEMU's exit
                time.sleep(POLL_S)
                continue
            out = []
            for line in text.splitlines():
                if line.strip():
                    ok, answer = serve(qmp, dev, line.split())
                    out.append(answer)
                    if not ok:
                        break
            put_reply(rep, out or ["error empty request"])
    except (EOFError, ConnectionError):
        pass                                # QEMU is gone


if __name__ == "__main__":
    main()
