/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The verdict of one test case: pass or fail, and notes that say why.
 * A case does not stop at its first failed check: every check that fails
 * adds its reason, remarks are added without failing, and the caller
 * prints the notes as TAP comments next to the case's one result line.
 *
 * VERDICT_NOTE_LEN may be defined before this header is included; the
 * pair tests keep the default, the size of the note in their control
 * messages, so that a side's notes reach the peer whole.
 */
#ifndef VRNIC_SELFTEST_VERDICT_H
#define VRNIC_SELFTEST_VERDICT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "kselftest.h"

#ifndef VERDICT_NOTE_LEN
#define VERDICT_NOTE_LEN	480
#endif

struct verdict {
	bool ok;
	char note[VERDICT_NOTE_LEN];
};

/* Appends to the notes, "; " between two; what does not fit is cut off. */
static inline void vnote(struct verdict *v, const char *fmt, va_list ap)
{
	size_t n = strlen(v->note);

	if (n && n + 2 < sizeof(v->note)) {
		strcpy(v->note + n, "; ");
		n += 2;
	}
	if (n < sizeof(v->note))
		vsnprintf(v->note + n, sizeof(v->note) - n, fmt, ap);
}

/* Fails the case (on this side) with a reason. */
static inline __printf(2, 3) void fail(struct verdict *v, const char *fmt, ...)
{
	va_list ap;

	v->ok = false;
	va_start(ap, fmt);
	vnote(v, fmt, ap);
	va_end(ap);
}

/* A remark that does not fail the case. */
static inline __printf(2, 3) void info(struct verdict *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vnote(v, fmt, ap);
	va_end(ap);
}

#endif
