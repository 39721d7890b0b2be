/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control connection of a pair test (tools/vm -n 2): one TCP
 * connection over the vrnic net_device on which the two nodes walk their
 * cases in step and swap QP numbers, keys and verdicts. Node 1 listens,
 * node 0 connects. Each test keeps the socket in its own state and passes
 * a pointer to it: once the connection is lost it is -1, so that every
 * later exchange fails at once and the cases left fail instead of waiting
 * for a peer that is gone. The messages on it are the test's own.
 */
#ifndef VRNIC_SELFTEST_CTL_H
#define VRNIC_SELFTEST_CTL_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "kselftest.h"
#include "common.h"

/*
 * Send and receive timeout of the socket: longer than any single wait of
 * a case, so a slow case is not taken for a lost peer.
 */
#define CTL_TIMEOUT_S	240

/* Closes the connection, the first time only, and says why. */
static inline void ctl_lost(int *sock, const char *why)
{
	if (*sock < 0)
		return;
	ksft_print_msg("control connection lost: %s\n", why);
	close(*sock);
	*sock = -1;
}

/* All len bytes out of (out) or into p, or false: the connection is lost. */
static inline bool ctl_io(int *sock, void *p, size_t len, bool out)
{
	char *b = p;

	while (len && *sock >= 0) {
		ssize_t r = out ? send(*sock, b, len, MSG_NOSIGNAL) :
				  recv(*sock, b, len, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			ctl_lost(sock, r ? strerror(errno) : "closed by the peer");
			return false;
		}
		b += r;
		len -= r;
	}
	return *sock >= 0;
}

/*
 * Sets *sock to the connection to the peer. The server (node 1) waits for
 * it on port, the other node connects to peer_ip, retrying: each waits up
 * to 120 s, since the two guests do not boot at the same moment. nobody
 * names the peer that did not come ("nobody connected to port ...").
 */
static inline bool ctl_connect(int *sock, bool server, struct in_addr peer_ip,
			       int port, const char *nobody)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = CTL_TIMEOUT_S };
	double end = now() + 120;
	int one = 1, fd = -1;

	if (server) {
		struct pollfd p = { .events = POLLIN };

		p.fd = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(p.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(p.fd, (struct sockaddr *)&a, sizeof(a)) ||
		    listen(p.fd, 1) || poll(&p, 1, 120000) != 1) {
			ksft_print_msg("%s connected to port %d\n", nobody, port);
			close(p.fd);
			return false;
		}
		fd = accept(p.fd, NULL, NULL);
		close(p.fd);
	} else {
		a.sin_addr = peer_ip;
		for (;;) {
			fd = socket(AF_INET, SOCK_STREAM, 0);
			if (!connect(fd, (struct sockaddr *)&a, sizeof(a)))
				break;
			close(fd);
			fd = -1;
			if (now() > end)
				break;
			usleep(250000);
		}
	}
	if (fd < 0) {
		ksft_print_msg("control connection to the peer failed\n");
		return false;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	*sock = fd;
	return true;
}

#endif
