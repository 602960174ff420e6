/*
 * log.c
 *	  Levelled log lines for infer-worker (see log.h for the format).
 *
 * Every message is passed through log_escape() before it is written, so a
 * newline or an escape sequence in a string that came from a request (a
 * model file name, say) cannot forge or garble a log line.
 *
 * Threading: the level is read without a lock (an int set once at startup);
 * each line is formatted into a local buffer and written with one write(2),
 * so lines from several threads never interleave.
 */
#include "worker/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static volatile log_level current_level = LOG_LEVEL_INFO;

/* Sets the lowest level that is printed. */
void
log_set_level(log_level level)
{
	current_level = level;
}

/* The lowest level that is printed. */
log_level
log_get_level(void)
{
	return current_level;
}

/* Parses a level name (case-insensitive); -1 when it is not one. */
int
log_parse_level(const char *name, log_level *level)
{
	if (name == NULL)
		return -1;
	if (strcasecmp(name, "debug") == 0)
		*level = LOG_LEVEL_DEBUG;
	else if (strcasecmp(name, "info") == 0)
		*level = LOG_LEVEL_INFO;
	else if (strcasecmp(name, "warn") == 0 || strcasecmp(name, "warning") == 0)
		*level = LOG_LEVEL_WARN;
	else if (strcasecmp(name, "error") == 0)
		*level = LOG_LEVEL_ERROR;
	else
		return -1;
	return 0;
}

/* Upper-case name of level. */
const char *
log_level_name(log_level level)
{
	switch (level)
	{
		case LOG_LEVEL_DEBUG:
			return "DEBUG";
		case LOG_LEVEL_INFO:
			return "INFO";
		case LOG_LEVEL_WARN:
			return "WARN";
		case LOG_LEVEL_ERROR:
			return "ERROR";
	}
	return "?";
}

/*
 * Length of the well-formed UTF-8 sequence (2-4 bytes, no overlong forms,
 * no surrogates, at most U+10FFFF) starting at p, or 0 when there is none.
 * n is the number of bytes available.
 */
static size_t
utf8_seq_len(const unsigned char *p, size_t n)
{
	size_t		len;
	unsigned	lo = 0x80,
				hi = 0xBF;

	if (p[0] >= 0xC2 && p[0] <= 0xDF)
		len = 2;
	else if (p[0] >= 0xE0 && p[0] <= 0xEF)
	{
		len = 3;
		if (p[0] == 0xE0)
			lo = 0xA0;
		else if (p[0] == 0xED)
			hi = 0x9F;
	}
	else if (p[0] >= 0xF0 && p[0] <= 0xF4)
	{
		len = 4;
		if (p[0] == 0xF0)
			lo = 0x90;
		else if (p[0] == 0xF4)
			hi = 0x8F;
	}
	else
		return 0;
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (p[i] < 0x80 || p[i] > 0xBF)
			return 0;
	return len;
}

/* Escapes s into out; see log.h. */
char *
log_escape(const char *s, char *out, size_t outlen)
{
	static const char hx[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *) (s != NULL ? s : "(null)");
	size_t		n = strlen((const char *) p);
	size_t		o = 0;

	if (outlen == 0)
		return out;
	for (size_t i = 0; i < n;)
	{
		char		esc[5];
		size_t		elen = 0;
		size_t		take = 1;

		if (p[i] == '\\')
		{
			esc[0] = '\\';
			esc[1] = '\\';
			elen = 2;
		}
		else if (p[i] < 0x20 || p[i] == 0x7F)
		{
			esc[0] = '\\';
			elen = 2;
			if (p[i] == '\n')
				esc[1] = 'n';
			else if (p[i] == '\r')
				esc[1] = 'r';
			else if (p[i] == '\t')
				esc[1] = 't';
			else
				elen = 0;
		}
		else if (p[i] < 0x80)
		{
			esc[0] = (char) p[i];
			elen = 1;
		}
		else if ((take = utf8_seq_len(p + i, n - i)) > 0)
		{
			memcpy(esc, p + i, take);
			elen = take;
		}
		else
			take = 1;
		if (elen == 0)
		{
			/* Other control bytes and invalid UTF-8: \xHH. */
			esc[0] = '\\';
			esc[1] = 'x';
			esc[2] = hx[p[i] >> 4];
			esc[3] = hx[p[i] & 15];
			elen = 4;
		}
		if (o + elen >= outlen)
			break;				/* cut whole: never half an escape */
		memcpy(out + o, esc, elen);
		o += elen;
		i += take;
	}
	out[o] = '\0';
	return out;
}

/*
 * Formats one line (timestamp, pid, level, message) and writes it to
 * stderr in one call.  Long messages are cut at the buffer's size.
 */
void
log_msg(log_level level, const char *fmt,...)
{
	char		line[4096];
	char		msg[2048];
	struct timespec ts;
	struct tm	tm;
	size_t		n;
	int			k;
	va_list		ap;

	if (level < current_level)
		return;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	k = snprintf(line + n, sizeof(line) - n, ".%03ldZ infer-worker[%ld] %s ",
				 ts.tv_nsec / 1000000L, (long) getpid(), log_level_name(level));
	if (k > 0)
		n += (size_t) k;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Escapes may grow the message: what does not fit in the line is cut. */
	log_escape(msg, line + n, sizeof(line) - n - 1);
	n += strlen(line + n);
	line[n++] = '\n';

	/* stderr is unbuffered, but one write keeps the line whole. */
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}
