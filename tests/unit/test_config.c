/*
 * test_config.c
 *	  Unit tests of the configuration file reader (worker/config.c): keys
 *	  from a getopt table, values handed to the apply function in file
 *	  order, comments and blank lines, the first error with its line
 *	  (unknown key, bad value, a line without "=", a section, a key twice,
 *	  a line too long), command-line values recorded over the file's, and
 *	  --print-config's text read back to the same values.
 *
 * Prints "test_config: N passed, M failed"; exits 1 on any failure.
 * Threading: single-threaded.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "worker/config.h"
#include "tests/unit/testutil.h"

static const struct option opts[] = {
	{"listen", required_argument, NULL, 'l'},
	{"threads", required_argument, NULL, 't'},
	{"log-level", required_argument, NULL, 'v'},
	{"keygen", required_argument, NULL, 'G'},
	{"verbose", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0}
};

/* What the apply function saw. */
typedef struct seen
{
	char		log[512];		/* "code=value;" for each call */
} seen;

/* An apply function: records each call; refuses threads that are not digits. */
static int
apply(void *arg, int code, const char *flag, const char *value, char *err,
	  size_t errlen)
{
	seen	   *s = arg;
	size_t		n = strlen(s->log);

	snprintf(s->log + n, sizeof(s->log) - n, "%c=%s;", code, value);
	if (code == 't' && strspn(value, "0123456789") != strlen(value))
	{
		snprintf(err, errlen, "%s must be a number, not \"%s\"", flag, value);
		return -1;
	}
	return 0;
}

/* Defaults for config_print. */
static const char *
defaults(int code)
{
	return code == 'v' ? "info" : NULL;
}

/* Writes text to a temporary file; returns its path (static buffer). */
static const char *
write_file(const char *text)
{
	static char path[64];
	FILE	   *f;

	snprintf(path, sizeof(path), "/tmp/test_config_%d.conf", (int) getpid());
	f = fopen(path, "w");
	if (f != NULL)
	{
		fputs(text, f);
		fclose(f);
	}
	return path;
}

/* Reads text as a configuration: 0 or -1, *err and what apply saw. */
static int
read_text(const char *text, seen *s, char *err, size_t errlen)
{
	config	   *c = config_new(opts, "G");
	int			rc;

	memset(s, 0, sizeof(*s));
	err[0] = '\0';
	rc = config_read(c, write_file(text), apply, s, err, errlen);
	config_destroy(&c);
	CHECK_EXPR(c == NULL);
	return rc;
}

/* Whether err ends with suffix after "PATH:". */
static int
error_is(const char *err, const char *suffix)
{
	const char *p = strstr(err, ".conf:");

	return p != NULL && strcmp(p + strlen(".conf:"), suffix) == 0;
}

/* Good files: values in order, comments, spaces, no newline at the end. */
static void
test_good(void)
{
	seen		s;
	char		err[1024];

	CHECK(read_text("# comment\n; another\n\nlisten = tcp://127.0.0.1:5555\n"
					"threads=4  \nlog-level = debug", &s, err, sizeof(err)) == 0,
		  "good file refused: %s", err);
	CHECK(strcmp(s.log, "l=tcp://127.0.0.1:5555;t=4;v=debug;") == 0, "applied: %s", s.log);
	CHECK_EXPR(read_text("", &s, err, sizeof(err)) == 0 && s.log[0] == '\0');
}

/* Bad files: the first error, with its line. */
static void
test_errors(void)
{
	seen		s;
	char		err[1024];
	char		longline[400];

	CHECK_EXPR(read_text("listen = x\nbogus = 1\n", &s, err, sizeof(err)) == -1);
	CHECK(error_is(err, "2: unknown key \"bogus\" (the keys are the long options of infer-worker --help, without the dashes)"),
		  "unknown key: %s", err);
	CHECK_EXPR(read_text("threads = four\n", &s, err, sizeof(err)) == -1);
	CHECK(error_is(err, "1: threads must be a number, not \"four\""), "bad value: %s", err);
	CHECK_EXPR(read_text("listen = x\n\nthreads 4\nbogus = 2\n", &s, err, sizeof(err)) == -1);
	CHECK(error_is(err, "3: expected \"key = value\", a comment or an empty line"),
		  "no '=': %s", err);
	/* an error of ours before inih's: ours (line 1) wins */
	CHECK_EXPR(read_text("bogus = 1\nthreads 4\n", &s, err, sizeof(err)) == -1);
	CHECK(error_is(err, "1: unknown key \"bogus\" (the keys are the long options of infer-worker --help, without the dashes)"),
		  "first error: %s", err);
	CHECK_EXPR(read_text("listen = x\n  threads = 4\n", &s, err, sizeof(err)) == -1);
	CHECK(error_is(err, "2: an indented line continues the key \"listen\" of line 1; remove the indentation"),
		  "indented: %s", err);
	CHECK_EXPR(read_text("[worker]\nthreads = 4\n", &s, err, sizeof(err)) == -1);
	CHECK(strstr(err, ".conf:2: sections are not used (found [worker])") != NULL, "section: %s", err);
	CHECK_EXPR(read_text("threads = 1\n\nthreads = 2\n", &s, err, sizeof(err)) == -1);
	CHECK(error_is(err, "3: key \"threads\" is set twice (first on line 1)"), "twice: %s", err);
	/* " #" after a value is no comment to inih: refused, not kept in the value */
	CHECK_EXPR(read_text("listen = tcp://127.0.0.1:5555   # the request socket\n", &s, err,
						 sizeof(err)) == -1);
	CHECK(error_is(err, "1: the value of \"listen\" has \" #\" in it, which does not start a comment after a value; start such a comment with \" ;\", or put it on its own line"),
		  "hash comment: %s", err);
	CHECK(read_text("listen = tcp://127.0.0.1:5555 ; the request socket\nlog-level = debug#x\n",
					&s, err, sizeof(err)) == 0 &&
		  strcmp(s.log, "l=tcp://127.0.0.1:5555;v=debug#x;") == 0,
		  "' ;' ends a value, a '#' within one stays: %s %s", err, s.log);
	CHECK_EXPR(read_text("keygen = /tmp/k\n", &s, err, sizeof(err)) == -1);
	CHECK(strstr(err, ":1: unknown key \"keygen\"") != NULL, "not a key: %s", err);
	CHECK_EXPR(read_text("verbose = 1\n", &s, err, sizeof(err)) == -1);
	CHECK(strstr(err, ":1: unknown key \"verbose\"") != NULL, "no argument: %s", err);
	memset(longline, 'a', sizeof(longline) - 2);
	memcpy(longline, "listen = ", 9);
	longline[sizeof(longline) - 2] = '\n';
	longline[sizeof(longline) - 1] = '\0';
	{
		char		text[512];

		snprintf(text, sizeof(text), "threads = 1\n%sthreads = 2\n", longline);
		CHECK_EXPR(read_text(text, &s, err, sizeof(err)) == -1);
		CHECK(error_is(err, "2: line longer than 198 bytes"), "long line: %s", err);
	}
	{
		config	   *c = config_new(opts, "G");

		CHECK_EXPR(config_read(c, "/nonexistent/x.conf", apply, &s, err, sizeof(err)) == -1);
		CHECK(strcmp(err, "/nonexistent/x.conf: could not open: No such file or directory") == 0,
			  "missing: %s", err);
		config_destroy(&c);
	}
}

/* Command-line values over the file's, and config_print read back. */
static void
test_print_round_trip(void)
{
	config	   *c = config_new(opts, "G");
	config	   *c2 = config_new(opts, "G");
	seen		s;
	char		err[1024];
	char		text[1024] = "";
	FILE	   *f = fmemopen(text, sizeof(text) - 1, "w");

	memset(&s, 0, sizeof(s));
	CHECK_EXPR(config_read(c, write_file("listen = a\nthreads = 2\n"), apply, &s,
						   err, sizeof(err)) == 0);
	CHECK_EXPR(config_set(c, 't', "8") != NULL);
	CHECK_EXPR(config_set(c, 'G', "x") == NULL);	/* no key */
	CHECK_EXPR(config_print(c, f, defaults) == 0);
	fclose(f);
	CHECK(strstr(text, "\nlisten = a\nthreads = 8\n# log-level = info\n") != NULL &&
		  strstr(text, "keygen") == NULL && strstr(text, "verbose") == NULL,
		  "printed:\n%s", text);
	memset(&s, 0, sizeof(s));
	CHECK_EXPR(config_read(c2, write_file(text), apply, &s, err, sizeof(err)) == 0);
	CHECK(strcmp(s.log, "l=a;t=8;") == 0, "read back: %s", s.log);
	config_destroy(&c);
	config_destroy(&c2);
	unlink(write_file(""));
}

/* Runs every test. */
int
main(void)
{
	test_good();
	test_errors();
	test_print_round_trip();
	unlink(write_file(""));
	return tu_report("test_config");
}
