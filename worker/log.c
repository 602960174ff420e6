/*
 * log.c
 *	  Levelled log lines for infer-worker (see log.h for the format).
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
 * Formats one line (timestamp, pid, level, message) and writes it to
 * stderr in one call.  Long messages are cut at the buffer's size.
 */
void
log_msg(log_level level, const char *fmt,...)
{
	char		line[4096];
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
	k = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (k > 0)
		n += ((size_t) k < sizeof(line) - n - 1) ? (size_t) k : sizeof(line) - n - 2;
	line[n++] = '\n';

	/* stderr is unbuffered, but one write keeps the line whole. */
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}
