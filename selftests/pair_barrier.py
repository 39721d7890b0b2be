#!/usr/bin/env python3
"""Rendezvous of the two guests of a pair: node 1 listens, node 0 connects.

usage: pair_barrier.py NAME  (both nodes call it with the same NAME; each
returns once the other has arrived). Uses TCP over the vrnic wire, so it
also proves the Ethernet function carries a connection.
"""
import os
import socket
import sys
import time

PORT = 7471
name = sys.argv[1].encode()
node = int(os.environ["VRNIC_NODE"])
peer = os.environ["VRNIC_PEER_IP"]
deadline = time.monotonic() + float(os.environ.get("VRNIC_BARRIER_TIMEOUT", "120"))

if node == 1:
    srv = socket.create_server(("", PORT), reuse_port=True)
    srv.settimeout(deadline - time.monotonic())
    conn, _ = srv.accept()
    got = conn.recv(256)
    conn.sendall(name)
    conn.close()
else:
    while True:
        try:
            c = socket.create_connection((peer, PORT), timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline:
                sys.exit(f"pair_barrier {sys.argv[1]}: peer never arrived")
            time.sleep(0.5)
    c.sendall(name)
    got = c.recv(256)
    c.close()
if got != name:
    sys.exit(f"pair_barrier: peer is at {got!r}, we are at {name!r}")
