#!/usr/bin/env python3
"""Run a command on the other guest of a pair: the remote shell mpirun needs.

usage: exec_relay.py --serve     (node 1: run commands node 0 sends, until
                                  killed)
       exec_relay.py HOST CMD... (node 0: run CMD on HOST through its
                                  server, as "ssh HOST CMD..." would)

The harness's guests have no ssh; Open MPI's mpirun starts its daemon on
the other node through the program named by its plm_rsh_agent parameter,
called like ssh: HOST, then the command's words, which the remote shell
joins and runs. This is that program, over TCP on the pair's wire.

The client's output is the command's output (stdout and stderr together)
and its exit status the command's. When the client goes away (mpirun ends
its daemons by ending the agents), the server kills the command's process
group. The server takes connections only from the peer's address
(VRNIC_PEER_IP) and listens only on this node's (VRNIC_IP).
"""
import os
import signal
import socket
import struct
import subprocess
import sys
import threading

PORT = 7472
OUT, EXIT = b"o", b"x"


def send_msg(sock, kind, data):
    sock.sendall(kind + struct.pack("!I", len(data)) + data)


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def recv_msg(sock):
    head = recv_exact(sock, 5)
    if head is None:
        return None, None
    kind, n = head[:1], struct.unpack("!I", head[1:])[0]
    data = recv_exact(sock, n)
    return (kind, data) if data is not None else (None, None)


def serve_one(conn):
    kind, cmd = recv_msg(conn)
    if kind != OUT:
        conn.close()
        return
    print("run:", cmd.decode(), flush=True)
    proc = subprocess.Popen(["/bin/sh", "-c", cmd.decode()],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)

    def watch_client():
        # Anything from the client, or its end, ends the command.
        conn.recv(1)
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass

    threading.Thread(target=watch_client, daemon=True).start()
    try:
        for chunk in iter(lambda: proc.stdout.read1(65536), b""):
            send_msg(conn, OUT, chunk)
        send_msg(conn, EXIT, struct.pack("!i", proc.wait()))
    except OSError:
        proc.kill()
    conn.close()


def serve():
    srv = socket.create_server((os.environ["VRNIC_IP"], PORT),
                               reuse_port=True)
    peer = os.environ["VRNIC_PEER_IP"]
    while True:
        conn, addr = srv.accept()
        if addr[0] != peer:
            conn.close()
            continue
        threading.Thread(target=serve_one, args=(conn,), daemon=True).start()


def run(host, words):
    sock = socket.create_connection((host, PORT), timeout=30)
    sock.settimeout(None)
    send_msg(sock, OUT, " ".join(words).encode())
    while True:
        kind, data = recv_msg(sock)
        if kind == OUT:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        elif kind == EXIT:
            return struct.unpack("!i", data)[0]
        else:
            return 255


def main():
    if sys.argv[1:] == ["--serve"]:
        serve()
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    status = run(sys.argv[1], sys.argv[2:])
    sys.exit(status if status >= 0 else 128 - status)


if __name__ == "__main__":
    main()
