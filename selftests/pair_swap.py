#!/usr/bin/env python3
"""Exchange a note between the two guests of a pair: node 1 listens, node 0
connects (TCP over the wire, like pair_barrier.py, on its own port).

usage: pair_swap.py NAME < MINE > THEIRS  (both nodes call it with the same
NAME, within VRNIC_BARRIER_TIMEOUT seconds of each other, default 60; each
prints what the other sent).
"""
import os
import socket
import sys
import time

PORT = 7473
name = sys.argv[1]
data = (name + "\n" + sys.stdin.read()).encode()
wait = float(os.environ.get("VRNIC_BARRIER_TIMEOUT", "60"))
deadline = time.monotonic() + wait
if os.environ["VRNIC_NODE"] == "1":
    srv = socket.create_server(("", PORT), reuse_port=True)
    srv.settimeout(wait)
    c, _ = srv.accept()
else:
    while True:
        try:
            c = socket.create_connection((os.environ["VRNIC_PEER_IP"], PORT),
                                         timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline:
                sys.exit("pair_swap: the peer never arrived")
            time.sleep(0.5)
c.settimeout(max(deadline - time.monotonic(), 1))
c.sendall(len(data).to_bytes(4, "little") + data)
got = b""
while len(got) < 4 or len(got) < 4 + int.from_bytes(got[:4], "little"):
    b = c.recv(65536)
    if not b:
        sys.exit("pair_swap: the peer closed early")
    got += b
c.close()
lines = got[4:].decode().split("\n", 1)
if lines[0] != name:
    sys.exit(f"pair_swap: the peer is at {lines[0]!r}, we are at {name!r}")
sys.stdout.write(lines[1])
