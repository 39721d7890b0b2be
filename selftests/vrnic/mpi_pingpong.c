// SPDX-License-Identifier: GPL-2.0
/*
 * A small MPI program for two ranks, one per guest: a ping-pong of
 * messages from 8 bytes to 1 MiB, each message's contents checked on
 * arrival and on return, then an all-reduce (sum) of 256 Ki 64-bit
 * integers whose result is checked element by element. Rank 0 prints one
 * line per size (median round trip, bandwidth) and "mpi_pingpong: ok", or
 * says what was wrong; the exit status is 0 only when everything arrived
 * as sent.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITERS		20
#define RED_N		(256 * 1024)

static const size_t sizes[] = { 8, 4096, 65536, 1 << 20 };

static uint8_t pat(size_t size, int iter, int rank, size_t k)
{
	return (uint8_t)(k * 131 + size * 7 + iter * 17 + rank * 29 + 1);
}

static void fill(uint8_t *p, size_t size, int iter, int rank)
{
	for (size_t k = 0; k < size; k++)
		p[k] = pat(size, iter, rank, k);
}

static long bad_byte(const uint8_t *p, size_t size, int iter, int rank)
{
	for (size_t k = 0; k < size; k++)
		if (p[k] != pat(size, iter, rank, k))
			return (long)k;
	return -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Rank 0 sends its pattern, rank 1 checks it and answers with its own. */
static int pingpong(int rank, size_t size, uint8_t *buf)
{
	double rtt[ITERS];
	int errors = 0;

	for (int i = 0; i < ITERS; i++) {
		double t0 = MPI_Wtime();
		long bad;

		if (rank == 0) {
			fill(buf, size, i, 0);
			MPI_Send(buf, (int)size, MPI_BYTE, 1, i, MPI_COMM_WORLD);
			memset(buf, 0, size);
			MPI_Recv(buf, (int)size, MPI_BYTE, 1, i, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			bad = bad_byte(buf, size, i, 1);
		} else {
			memset(buf, 0, size);
			MPI_Recv(buf, (int)size, MPI_BYTE, 0, i, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			bad = bad_byte(buf, size, i, 0);
			fill(buf, size, i, 1);
			MPI_Send(buf, (int)size, MPI_BYTE, 0, i, MPI_COMM_WORLD);
		}
		rtt[i] = MPI_Wtime() - t0;
		if (bad >= 0) {
			printf("rank %d: %zu-byte message %d differs at byte %ld\n",
			       rank, size, i, bad);
			errors++;
		}
	}
	if (rank == 0) {
		qsort(rtt, ITERS, sizeof(rtt[0]), cmp_double);
		printf("pingpong %7zu bytes: median round trip %8.1f us, %7.1f MB/s\n",
		       size, rtt[ITERS / 2] * 1e6,
		       2.0 * size / rtt[ITERS / 2] / 1e6);
	}
	return errors;
}

/* Element k of rank r is r * RED_N + k: the sum over both is known. */
static int allreduce(int rank, int nranks)
{
	int64_t *in = malloc(RED_N * sizeof(*in));
	int64_t *out = malloc(RED_N * sizeof(*out));
	double t0;
	int errors = 0;

	if (!in || !out) {
		printf("rank %d: out of memory\n", rank);
		return 1;
	}
	for (int64_t k = 0; k < RED_N; k++)
		in[k] = (int64_t)rank * RED_N + k;
	t0 = MPI_Wtime();
	MPI_Allreduce(in, out, RED_N, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	t0 = MPI_Wtime() - t0;
	for (int64_t k = 0; k < RED_N; k++) {
		int64_t want = (int64_t)nranks * k +
			       (int64_t)RED_N * nranks * (nranks - 1) / 2;

		if (out[k] != want) {
			printf("rank %d: allreduce element %lld is %lld, not %lld\n",
			       rank, (long long)k, (long long)out[k],
			       (long long)want);
			errors++;
			break;
		}
	}
	if (rank == 0)
		printf("allreduce %d x int64 sum over %d ranks: %.1f ms\n",
		       RED_N, nranks, t0 * 1e3);
	free(in);
	free(out);
	return errors;
}

int main(int argc, char **argv)
{
	int rank, nranks, errors = 0, all_errors = 0;
	char name[MPI_MAX_PROCESSOR_NAME];
	uint8_t *buf;
	int len;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	MPI_Get_processor_name(name, &len);
	printf("rank %d of %d on %s\n", rank, nranks, name);
	fflush(stdout);
	if (nranks != 2) {
		if (rank == 0)
			printf("mpi_pingpong: needs 2 ranks, has %d\n", nranks);
		MPI_Finalize();
		return 1;
	}

	buf = malloc(sizes[sizeof(sizes) / sizeof(sizes[0]) - 1]);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		errors += pingpong(rank, sizes[s], buf);
	errors += allreduce(rank, nranks);
	free(buf);

	MPI_Reduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, 0,
		   MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_pingpong: %s (%d errors)\n",
		       all_errors ? "FAILED" : "ok", all_errors);
	MPI_Finalize();
	return rank == 0 && all_errors ? 1 : 0;
}
