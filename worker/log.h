/*
 * log.h
 *	  Levelled log lines for infer-worker, written to stderr.
 *
 * Each line reads "2026-11-30T01:08:05.123Z infer-worker[4242] INFO text":
 * an ISO 8601 UTC timestamp with milliseconds, the program and pid, the
 * level, then the message.  Lines below the current level are dropped.
 *
 * Threading: log_msg() may be called from any thread (one write(2) per
 * line, so lines do not interleave); log_set_level() belongs to startup.
 */
#ifndef INFER_LOG_H
#define INFER_LOG_H

#include <stddef.h>

typedef enum log_level
{
	LOG_LEVEL_DEBUG = 0,
	LOG_LEVEL_INFO,
	LOG_LEVEL_WARN,
	LOG_LEVEL_ERROR
} log_level;

/* Sets the lowest level that is printed (LOG_LEVEL_INFO by default). */
void		log_set_level(log_level level);

/* The lowest level that is printed. */
log_level	log_get_level(void);

/*
 * Parses "debug", "info", "warn" (or "warning") and "error" into *level.
 * Returns 0, or -1 when name is none of them.
 */
int			log_parse_level(const char *name, log_level *level);

/* Upper-case name of level ("DEBUG", "INFO", "WARN", "ERROR"). */
const char *log_level_name(log_level level);

/*
 * Copies s into out (outlen bytes, always NUL-terminated) with control
 * characters escaped ("\n", "\r", "\t", others and DEL as "\xHH"), a
 * backslash doubled, and each byte that is not part of well-formed UTF-8
 * written as "\xHH"; cut (never inside an escape) when out is too small.
 * Returns out.  log_msg() applies it to every message, so strings from
 * requests may be logged as they are.
 */
char	   *log_escape(const char *s, char *out, size_t outlen);

/*
 * Writes one line at level when level is enabled; a trailing '\n' is added.
 * The message goes through log_escape(), so it is always one line.
 */
void		log_msg(log_level level, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)

#endif							/* INFER_LOG_H */
