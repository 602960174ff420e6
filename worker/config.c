/*
 * config.c
 *	  infer-worker's configuration file and --print-config (see config.h).
 *
 * libinih parses; this file feeds it the lines (so that it knows the line
 * each key is on: inih's own line numbers reach only its return value),
 * maps keys to the caller's long options, and keeps the values.  The
 * first error wins: inih goes on past a bad line, so the handler keeps
 * the first message and the line it came from, and config_read compares
 * it with the line inih reports (a syntax error inih found earlier).
 *
 * Threading: none of its own; a config belongs to one thread.
 */
#include "worker/config.h"

#include <errno.h>
#include <ini.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

struct config
{
	const struct option *opts;	/* the caller's table, borrowed */
	int			n_opts;
	char	   *not_keys;		/* codes that are no keys */
	char	  **values;			/* n_opts: the value set, or NULL */
	int		   *line;			/* n_opts: file line it came from, 0: none */
};

/* What the reader and handler share while config_read runs. */
typedef struct read_state
{
	config	   *c;
	FILE	   *f;
	int			lineno;			/* line the reader gave last */
	int			indented;		/* it began with white space */
	int			err_line;		/* first line with an error, 0: none */
	char		msg[1024];		/* its message */
	config_apply_fn apply;
	void	   *arg;
} read_state;

/* Whether option i of c is a configuration key. */
static int
is_key(const config *c, int i)
{
	const struct option *o = &c->opts[i];

	return o->has_arg == required_argument && o->flag == NULL &&
		strchr(c->not_keys, o->val) == NULL;
}

/* Index of the key named name, or -1. */
static int
find_key(const config *c, const char *name)
{
	for (int i = 0; i < c->n_opts; i++)
		if (is_key(c, i) && strcmp(c->opts[i].name, name) == 0)
			return i;
	return -1;
}

/* New configuration; see config.h. */
config *
config_new(const struct option *longopts, const char *not_keys)
{
	config	   *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->opts = longopts;
	while (longopts[c->n_opts].name != NULL)
		c->n_opts++;
	c->not_keys = strdup(not_keys != NULL ? not_keys : "");
	c->values = calloc((size_t) c->n_opts + 1, sizeof(*c->values));
	c->line = calloc((size_t) c->n_opts + 1, sizeof(*c->line));
	if (c->not_keys == NULL || c->values == NULL || c->line == NULL)
		config_destroy(&c);
	return c;
}

/* Frees *c; see config.h. */
void
config_destroy(config **cp)
{
	config	   *c;

	if (cp == NULL || *cp == NULL)
		return;
	c = *cp;
	for (int i = 0; c->values != NULL && i < c->n_opts; i++)
		free(c->values[i]);
	free(c->values);
	free(c->line);
	free(c->not_keys);
	free(c);
	*cp = NULL;
}

/* Records the first error of a read: message at the reader's line. */
static void
read_error(read_state *rs, const char *msg)
{
	if (rs->err_line != 0)
		return;
	rs->err_line = rs->lineno;
	snprintf(rs->msg, sizeof(rs->msg), "%s", msg);
}

/*
 * inih's reader: the next line into str (num bytes), counting lines; a
 * line inih could not take whole is an error (and is skipped).
 */
static char *
read_line(char *str, int num, void *stream)
{
	read_state *rs = stream;
	size_t		len;
	int			ch;

	if (fgets(str, num, rs->f) == NULL)
		return NULL;
	rs->lineno++;
	rs->indented = str[0] == ' ' || str[0] == '\t';
	len = strlen(str);
	if (len > 0 && str[len - 1] != '\n' && !feof(rs->f))
	{
		char		msg[128];

		snprintf(msg, sizeof(msg), "line longer than %d bytes", num - 2);
		read_error(rs, msg);
		while ((ch = fgetc(rs->f)) != EOF && ch != '\n')
			;
		str[0] = '\0';
	}
	return str;
}

/*
 * Whether value holds "#" after white space: meant as a comment after the
 * value, which inih does not take as one (only " ;"), so that a path or an
 * endpoint would end in it.
 */
static bool
hash_comment(const char *value)
{
	for (const char *p = strchr(value, '#'); p != NULL; p = strchr(p + 1, '#'))
		if (p > value && (p[-1] == ' ' || p[-1] == '\t'))
			return true;
	return false;
}

/* inih's handler: one "key = value" (section is "" outside sections). */
static int
on_key(void *user, const char *section, const char *name, const char *value)
{
	read_state *rs = user;
	config	   *c = rs->c;
	char		msg[1024];
	char		why[900];
	int			i;

	if (section[0] != '\0')
	{
		snprintf(msg, sizeof(msg), "sections are not used (found [%s]); write the keys at the top level", section);
		read_error(rs, msg);
		return 0;
	}
	i = find_key(c, name);
	if (i < 0)
	{
		snprintf(msg, sizeof(msg), "unknown key \"%s\" (the keys are the long options of infer-worker --help, without the dashes)", name);
		read_error(rs, msg);
		return 0;
	}
	if (c->line[i] != 0 && rs->indented)
	{
		/* inih reads an indented line as more of the key above it */
		snprintf(msg, sizeof(msg), "an indented line continues the key \"%s\" of line %d; remove the indentation", name, c->line[i]);
		read_error(rs, msg);
		return 0;
	}
	if (c->line[i] != 0)
	{
		snprintf(msg, sizeof(msg), "key \"%s\" is set twice (first on line %d)", name, c->line[i]);
		read_error(rs, msg);
		return 0;
	}
	if (hash_comment(value))
	{
		/* inih ends a value at " ;" only: the rest would be a path's */
		snprintf(msg, sizeof(msg), "the value of \"%s\" has \" #\" in it, which does not start a comment after a value; start such a comment with \" ;\", or put it on its own line", name);
		read_error(rs, msg);
		return 0;
	}
	c->values[i] = strdup(value);
	if (c->values[i] == NULL)
	{
		read_error(rs, "out of memory");
		return 0;
	}
	c->line[i] = rs->lineno;
	if (rs->apply(rs->arg, c->opts[i].val, c->opts[i].name, c->values[i],
				  why, sizeof(why)) != 0)
	{
		read_error(rs, why);
		return 0;
	}
	return 1;
}

/* Reads a configuration file; see config.h. */
int
config_read(config *c, const char *path, config_apply_fn apply, void *arg,
			char *err, size_t errlen)
{
	read_state	rs;
	int			rc;

	memset(&rs, 0, sizeof(rs));
	rs.c = c;
	rs.apply = apply;
	rs.arg = arg;
	rs.f = fopen(path, "r");
	if (rs.f == NULL)
	{
		snprintf(err, errlen, "%s: could not open: %s", path, strerror(errno));
		return -1;
	}
	rc = ini_parse_stream(read_line, &rs, on_key, &rs);
	fclose(rs.f);
	if (rc == 0 && rs.err_line == 0)
		return 0;
	if (rc == -2)
	{
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	/* inih found a line it could not parse before any error of ours */
	if (rc > 0 && (rs.err_line == 0 || rc < rs.err_line))
		snprintf(err, errlen, "%s:%d: expected \"key = value\", a comment or an empty line",
				 path, rc);
	else
		snprintf(err, errlen, "%s:%d: %s", path, rs.err_line, rs.msg);
	return -1;
}

/* Records a command-line value; see config.h. */
const char *
config_set(config *c, int code, const char *value)
{
	for (int i = 0; i < c->n_opts; i++)
	{
		char	   *copy;

		if (!is_key(c, i) || c->opts[i].val != code)
			continue;
		copy = strdup(value);
		if (copy == NULL)
			return NULL;
		free(c->values[i]);
		c->values[i] = copy;
		return copy;
	}
	return NULL;
}

/* Writes the effective configuration; see config.h. */
int
config_print(const config *c, FILE *f, config_default_fn default_of)
{
	fprintf(f, "# infer-worker configuration (infer-worker --print-config).\n"
			"# Keys are the long options of infer-worker --help; a command-line\n"
			"# flag overrides its key.  Commented keys show their defaults.\n");
	for (int i = 0; i < c->n_opts; i++)
	{
		const char *def;

		if (!is_key(c, i))
			continue;
		if (c->values[i] != NULL)
		{
			fprintf(f, "%s = %s\n", c->opts[i].name, c->values[i]);
			continue;
		}
		def = default_of != NULL ? default_of(c->opts[i].val) : NULL;
		fprintf(f, "# %s =%s%s\n", c->opts[i].name, def != NULL ? " " : "",
				def != NULL ? def : "");
	}
	return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}
