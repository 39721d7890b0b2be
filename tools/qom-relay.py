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
out of range), after which the rest of the request is not run. Lines
starting with "#" (a request id) are not run but come back first, so a
late reply to an older request is told apart. Both files appear whole
(written aside, then renamed). Only properties named fault-*
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
    """The request's text, taken out of DIR; None if there is none.

    DIR is writable by the guest: the request is claimed by renaming it
    (a newer one is never lost), and only a regular file is read (no
    symlink, FIFO, device or directory), at most MAX_REQUEST bytes;
    anything longer is refused whole rather than cut.
    """
    taken = path + ".taken"
    try:
        os.rename(path, taken)
    except FileNotFoundError:
        return None
    try:
        if not stat.S_ISREG(os.lstat(taken).st_mode):
            return "\0not a regular file"
        fd = os.open(taken, os.O_RDONLY | os.O_NOFOLLOW | os.O_NOCTTY)
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_REQUEST + 1)
        if len(data) > MAX_REQUEST:
            return f"\0longer than {MAX_REQUEST} bytes"
        return data.decode(errors="replace")
    finally:
        remove(taken)


def remove(path):
    """Remove a file or an empty directory the guest left at path."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            os.rmdir(path)
        else:
            os.unlink(path)
    except OSError:
        pass


def put_reply(path, lines):
    tmp = path + ".tmp"
    remove(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    remove(path)
    os.rename(tmp, path)


def answer(qmp, dev, text):
    """The reply lines for a request; its "#" lines (an id) come back first."""
    if text.startswith("\0"):
        return [f"error request {text[1:]}"]
    out = [line for line in text.splitlines() if line.startswith("#")]
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            ok, reply = serve(qmp, dev, line.split())
            out.append(reply)
            if not ok:
                break
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2])
    qmp = Qmp(sys.argv[1])
    dev = find_vrnic(qmp)
    req = os.path.join(sys.argv[2], "qom.req")
    rep = os.path.join(sys.argv[2], "qom.rep")
    try:
        while True:
            try:
                text = take_request(req)
            except OSError as e:
                text = f"\0unreadable: {e.strerror}"
            if text is None:
                qmp.run("query-status")     # notices QEMU's exit
                time.sleep(POLL_S)
                continue
            try:
                put_reply(rep, answer(qmp, dev, text) or ["error empty request"])
            except OSError as e:
                # The guest blocked the reply (e.g. a directory there).
                print(f"qom-relay: no reply written: {e}", file=sys.stderr)
    except (EOFError, ConnectionError):
        pass                                # QEMU is gone


if __name__ == "__main__":
    main()
