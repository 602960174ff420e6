/*
 * ocr_search.c
 *	  An example libpq application for pg_infer: loads image files into a
 *	  table, reads their text with infer.ocr, embeds that text with a
 *	  sentence-embedding model (infer.embed) and ranks the images by how
 *	  close their text is in meaning to a search phrase.
 *
 *	  ocr_search [-d CONNINFO] [-t TABLE] [-m MODEL] [-n LIMIT]
 *				 [-q QUERY]... [IMAGE_FILE]...
 *
 * The connection string CONNINFO (a libpq "key=value ..." string or a
 * postgresql:// URI) is optional: without it libpq reads PGHOST, PGPORT,
 * PGUSER, PGDATABASE and the other PG* variables.  The database needs the
 * pg_infer extension and at least one worker (infer.add_worker).
 *
 * The table (default ocr_images) is created when missing:
 *
 *	  id serial PRIMARY KEY, name text, img bytea, text text, embedding real[],
 *	  read boolean (whether its text was read; a column added to a table
 *	  an earlier version of the program made)
 *
 * With IMAGE_FILEs, one transaction (all or nothing):
 *	  1. inserts each file, its base name and its bytes, with PQexecParams;
 *		 the bytes go as a binary parameter (format 1), so they are sent as
 *		 they are: no escaping, no hex doubling;
 *	  2. reads the text of every row not read yet.  An UPDATE runs its
 *		 ML calls one row at a time (docs/sql.md lists what is batched), so
 *		 the text is computed by CREATE TABLE AS, which pg_infer batches,
 *		 and copied into the table by an UPDATE;
 *	  3. embeds the text of every row that has text but no embedding, the
 *		 same way (images without text, such as a blank page, get none and
 *		 are left out of searches).
 * Then, for each -q QUERY, the LIMIT rows whose embedding is most similar
 * (cosine, infer.similarity) to the embedding of QUERY.  QUERY, MODEL and
 * LIMIT travel as query parameters ($1, $2, $3), never inside the SQL.
 *
 * Output, on stdout, one line each (tab-separated fields; in TEXT a
 * newline is written as \n, a tab as \t and a backslash as \\):
 *	  inserted ID<TAB>NAME<TAB>BYTES bytes
 *	  recognised the text of N images in MS ms
 *	  text ID<TAB>NAME<TAB>TEXT						one per image read
 *	  embedded N texts with MODEL in MS ms
 *	  search QUERY
 *	  RANK<TAB>SCORE<TAB>NAME<TAB>TEXT				best first
 *
 * Errors: a message on stderr and exit status 1; for an error the server
 * raised, the message, detail and hint as the server gave them and the
 * SQLSTATE on a line of its own ("SQLSTATE: 22P03").  (With
 * PGOPTIONS='-c infer.on_error=null' a bad image is a WARNING on stderr
 * instead, and its text is NULL, printed as an empty TEXT.)  The transaction is
 * rolled back, so a bad image leaves nothing behind.  Exit status 2: wrong
 * arguments.
 *
 * Build: cc -std=c11 -o ocr_search ocr_search.c \
 *			 -I$(pg_config --includedir) -L$(pg_config --libdir) -lpq
 * (`make` builds it as build/bin/examples/ocr_search.)
 */
/* clock_gettime */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include <libpq-fe.h>

#define PROGNAME "ocr_search"
/* a bytea parameter's length is an int; PostgreSQL stores at most 1 GB */
#define MAX_IMAGE_BYTES (1024L * 1024 * 1024 - 1)
#define MAX_QUERIES 32
#define SQL_LEN 1024

typedef struct options
{
	const char *conninfo;		/* "" = the PG* environment variables */
	const char *table;
	const char *model;
	const char *limit;			/* a decimal number, sent as text */
	const char *queries[MAX_QUERIES];
	int			nqueries;
	char	  **files;
	int			nfiles;
} options;

/* Milliseconds of a monotonic clock. */
static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/*
 * Reports a failed statement: WHAT (what the program was doing), the
 * server's error (message, detail, hint) or libpq's, and the SQLSTATE.
 * Clears res (which may be NULL: libpq could not even make a result).
 * Returns -1, for the caller to return.
 */
static int
report_error(PGconn *conn, PGresult *res, const char *what)
{
	const char *msg = res != NULL ? PQresultErrorMessage(res) : "";
	const char *sqlstate = res != NULL ?
		PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	if (msg[0] == '\0')
		msg = PQerrorMessage(conn);
	fprintf(stderr, "%s: %s failed\n%s", PROGNAME, what, msg);
	if (msg[0] == '\0' || msg[strlen(msg) - 1] != '\n')
		fputc('\n', stderr);
	/* an error from libpq itself (connection lost) has no SQLSTATE */
	fprintf(stderr, "SQLSTATE: %s\n",
			sqlstate != NULL ? sqlstate : "none (the error came from libpq)");
	PQclear(res);
	return -1;
}

/*
 * Runs one statement with NPARAMS parameters (VALUES[i] of LENGTHS[i] bytes
 * in FORMATS[i]: 0 text, 1 binary; LENGTHS and FORMATS may be NULL for all
 * text) and returns its result, or NULL after report_error.  The caller
 * PQclears the result.
 */
static PGresult *
exec_checked(PGconn *conn, const char *what, const char *sql, int nparams,
			 const char *const *values, const int *lengths, const int *formats)
{
	PGresult   *res = PQexecParams(conn, sql, nparams, NULL, values, lengths,
								   formats, 0);
	ExecStatusType status = PQresultStatus(res);

	if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)
		return res;
	report_error(conn, res, what);
	return NULL;
}

/* Runs a statement without parameters whose rows are not needed; 0 or -1. */
static int
exec_command(PGconn *conn, const char *what, const char *sql)
{
	PGresult   *res = exec_checked(conn, what, sql, 0, NULL, NULL, NULL);

	if (res == NULL)
		return -1;
	PQclear(res);
	return 0;
}

/*
 * Writes SQL, a format with one %s for the (quoted) table name, into
 * buf[SQL_LEN]; -1 when it does not fit (a very long table name).
 */
static int
format_sql(char *buf, const char *fmt, const char *table)
{
	int			n = snprintf(buf, SQL_LEN, fmt, table);

	if (n < 0 || n >= SQL_LEN)
	{
		fprintf(stderr, "%s: the table name is too long\n", PROGNAME);
		return -1;
	}
	return 0;
}

/* Writes s with newline, tab and backslash escaped (\n, \t, \\). */
static void
print_escaped(const char *s)
{
	for (; *s != '\0'; s++)
	{
		if (*s == '\n')
			fputs("\\n", stdout);
		else if (*s == '\t')
			fputs("\\t", stdout);
		else if (*s == '\\')
			fputs("\\\\", stdout);
		else
			putchar(*s);
	}
}

/*
 * Reads the whole of PATH, a regular file, into a malloc'd buffer (*data,
 * *len bytes; the caller frees it).  0, or -1 with a message.
 */
static int
read_file(const char *path, char **data, long *len)
{
	FILE	   *f;
	char	   *buf = NULL;
	long		size;
	struct stat st;

	/* stat first: a FIFO would block fopen, a directory has no bytes */
	if (stat(path, &st) != 0)
	{
		fprintf(stderr, "%s: cannot open %s: %s\n", PROGNAME, path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode))
	{
		fprintf(stderr, "%s: %s is not a regular file\n", PROGNAME, path);
		return -1;
	}
	f = fopen(path, "rb");
	if (f == NULL)
	{
		fprintf(stderr, "%s: cannot open %s: %s\n", PROGNAME, path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
		fseek(f, 0, SEEK_SET) != 0)
	{
		fprintf(stderr, "%s: cannot read %s: %s\n", PROGNAME, path, strerror(errno));
		goto fail;
	}
	if (size > MAX_IMAGE_BYTES)
	{
		fprintf(stderr, "%s: %s is larger than the %ld bytes a bytea value can hold\n",
				PROGNAME, path, MAX_IMAGE_BYTES);
		goto fail;
	}
	/* one byte more, so that an empty file still gets a buffer */
	buf = malloc((size_t) size + 1);
	if (buf == NULL)
	{
		fprintf(stderr, "%s: out of memory reading %s\n", PROGNAME, path);
		goto fail;
	}
	if (fread(buf, 1, (size_t) size, f) != (size_t) size)
	{
		fprintf(stderr, "%s: cannot read %s: %s\n", PROGNAME, path,
				ferror(f) ? strerror(errno) : "the file got shorter");
		goto fail;
	}
	fclose(f);
	*data = buf;
	*len = size;
	return 0;

fail:
	free(buf);
	fclose(f);
	return -1;
}

/*
 * libpq's notice receiver: shows the server's warnings (infer.on_error =
 * null turns a rejected image into one) on stderr, and drops its NOTICEs
 * ("relation ... already exists, skipping").
 */
static void
show_warnings(void *arg, const PGresult *res)
{
	const char *severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);

	(void) arg;
	if (severity != NULL && strcmp(severity, "WARNING") == 0)
		fprintf(stderr, "%s: %s", PROGNAME, PQresultErrorMessage(res));
}

/* Creates the table when it does not exist; 0 or -1. */
static int
create_table(PGconn *conn, const char *table)
{
	char		sql[SQL_LEN];

	if (format_sql(sql, "CREATE TABLE IF NOT EXISTS %s ("
				   "id serial PRIMARY KEY, name text NOT NULL, "
				   "img bytea NOT NULL, text text, embedding real[], "
				   "read boolean NOT NULL DEFAULT false)",
				   table) != 0 ||
		exec_command(conn, "creating the table", sql) != 0)
		return -1;
	/* a table an earlier version of the program made lacks the column */
	if (format_sql(sql, "ALTER TABLE %s ADD COLUMN IF NOT EXISTS "
				   "read boolean NOT NULL DEFAULT false", table) != 0)
		return -1;
	return exec_command(conn, "adding the column read", sql);
}

/*
 * Inserts the file PATH as a row (its base name, its bytes) and prints the
 * row's id; 0 or -1.  The bytes are a binary parameter: libpq sends them
 * as they are, and the server takes them as the bytea value.
 */
static int
insert_image(PGconn *conn, const char *table, const char *path)
{
	char		sql[SQL_LEN];
	const char *slash = strrchr(path, '/');
	const char *name = slash != NULL ? slash + 1 : path;
	char	   *data = NULL;
	long		len = 0;
	const char *values[2];
	int			lengths[2];
	const int	formats[2] = {0, 1};	/* name as text, img as binary */
	PGresult   *res;

	if (format_sql(sql, "INSERT INTO %s (name, img) VALUES ($1, $2) RETURNING id",
				   table) != 0 ||
		read_file(path, &data, &len) != 0)
		return -1;
	values[0] = name;
	lengths[0] = 0;				/* ignored for text parameters */
	values[1] = data;
	lengths[1] = (int) len;
	res = exec_checked(conn, "inserting an image", sql, 2, values, lengths, formats);
	free(data);
	if (res == NULL)
	{
		fprintf(stderr, "%s: the file was %s\n", PROGNAME, path);
		return -1;
	}
	printf("inserted %s\t%s\t%ld bytes\n", PQgetvalue(res, 0, 0), name, len);
	PQclear(res);
	return 0;
}

/*
 * Reads the text of every row not read yet (read is false), in batches,
 * and prints it; 0 or -1.  CREATE TABLE AS is batched by pg_infer, an
 * UPDATE would call infer.ocr one row at a time.  A row is marked read
 * whatever its text: a bad image that infer.on_error = null made a NULL
 * text (and a warning) is not read again at the next run, and prints as
 * \N, as COPY writes a NULL.
 */
static int
recognise_text(PGconn *conn, const char *table)
{
	char		sql[SQL_LEN];
	PGresult   *res;
	double		t0 = now_ms();

	if (format_sql(sql, "CREATE TEMP TABLE ocr_search_text ON COMMIT DROP AS "
				   "SELECT id, infer.ocr(img) AS text FROM %s WHERE NOT read",
				   table) != 0 ||
		exec_command(conn, "reading the text of the images (infer.ocr)", sql) != 0)
		return -1;
	if (format_sql(sql, "UPDATE %s AS t SET text = o.text, read = true "
				   "FROM ocr_search_text AS o WHERE t.id = o.id",
				   table) != 0 ||
		exec_command(conn, "storing the text", sql) != 0)
		return -1;
	if (format_sql(sql, "SELECT t.id, t.name, t.text FROM %s AS t "
				   "JOIN ocr_search_text USING (id) ORDER BY t.id",
				   table) != 0)
		return -1;
	res = exec_checked(conn, "listing the text", sql, 0, NULL, NULL, NULL);
	if (res == NULL)
		return -1;
	printf("recognised the text of %d images in %.0f ms\n", PQntuples(res),
		   now_ms() - t0);
	for (int i = 0; i < PQntuples(res); i++)
	{
		printf("text %s\t%s\t", PQgetvalue(res, i, 0), PQgetvalue(res, i, 1));
		if (PQgetisnull(res, i, 2))
			fputs("\\N", stdout);
		else
			print_escaped(PQgetvalue(res, i, 2));
		putchar('\n');
	}
	PQclear(res);
	return 0;
}

/*
 * Embeds with MODEL the text of every row that has text but no embedding
 * (in batches, as recognise_text does); 0 or -1.
 */
static int
embed_text(PGconn *conn, const char *table, const char *model)
{
	char		sql[SQL_LEN];
	const char *values[1] = {model};
	PGresult   *res;
	double		t0 = now_ms();
	char		count[32];

	if (format_sql(sql, "CREATE TEMP TABLE ocr_search_embedding ON COMMIT DROP AS "
				   "SELECT id, infer.embed($1, text) AS embedding FROM %s "
				   "WHERE embedding IS NULL AND text <> ''",
				   table) != 0)
		return -1;
	res = exec_checked(conn, "embedding the text (infer.embed)", sql, 1, values,
					   NULL, NULL);
	if (res == NULL)
		return -1;
	/* "SELECT n": the command tag of CREATE TABLE AS gives the row count */
	snprintf(count, sizeof(count), "%s", PQcmdTuples(res));
	PQclear(res);
	if (format_sql(sql, "UPDATE %s AS t SET embedding = e.embedding "
				   "FROM ocr_search_embedding AS e WHERE t.id = e.id",
				   table) != 0 ||
		exec_command(conn, "storing the embeddings", sql) != 0)
		return -1;
	printf("embedded %s texts with %s in %.0f ms\n", count, model, now_ms() - t0);
	return 0;
}

/*
 * Prints the LIMIT rows whose text is closest in meaning to QUERY, best
 * first, with their cosine similarity; 0 or -1.  The query's embedding is
 * a scalar subquery, computed once, not once per row.
 */
static int
search(PGconn *conn, const char *table, const char *model, const char *query,
	   const char *limit)
{
	char		sql[SQL_LEN];
	const char *values[3] = {model, query, limit};
	PGresult   *res;

	if (format_sql(sql, "SELECT name, round(score::numeric, 4), text FROM ("
				   "SELECT id, name, text, infer.similarity(embedding, "
				   "(SELECT infer.embed($1, $2))) AS score "
				   "FROM %s WHERE embedding IS NOT NULL) AS s "
				   "ORDER BY score DESC, id LIMIT $3::int",
				   table) != 0)
		return -1;
	res = exec_checked(conn, "searching", sql, 3, values, NULL, NULL);
	if (res == NULL)
		return -1;
	fputs("search ", stdout);
	print_escaped(query);
	putchar('\n');
	for (int i = 0; i < PQntuples(res); i++)
	{
		printf("%d\t%s\t%s\t", i + 1, PQgetvalue(res, i, 1), PQgetvalue(res, i, 0));
		print_escaped(PQgetvalue(res, i, 2));
		putchar('\n');
	}
	PQclear(res);
	return 0;
}

/*
 * Loads the files and reads and embeds their text, in one transaction;
 * 0 or -1.  On -1 the transaction is left aborted: closing the connection
 * rolls it back.
 */
static int
load_images(PGconn *conn, const options *o, const char *table)
{
	if (exec_command(conn, "starting a transaction", "BEGIN") != 0)
		return -1;
	for (int i = 0; i < o->nfiles; i++)
		if (insert_image(conn, table, o->files[i]) != 0)
			return -1;
	if (recognise_text(conn, table) != 0 ||
		embed_text(conn, table, o->model) != 0)
		return -1;
	return exec_command(conn, "committing", "COMMIT");
}

/* Prints the usage to F. */
static void
usage(FILE *f)
{
	fprintf(f,
			"usage: %s [-d CONNINFO] [-t TABLE] [-m MODEL] [-n LIMIT] [-q QUERY]... [IMAGE_FILE]...\n"
			"  -d CONNINFO  libpq connection string or URI (default: the PG* variables)\n"
			"  -t TABLE     table of images (default ocr_images; created when missing)\n"
			"  -m MODEL     text embedding model (default minilm)\n"
			"  -n LIMIT     results per search (default 5)\n"
			"  -q QUERY     search the images' text for QUERY (repeatable)\n"
			"IMAGE_FILEs (JPEG or PNG) are inserted, read (infer.ocr) and embedded\n"
			"(infer.embed) in one transaction before the searches run.\n",
			PROGNAME);
}

/* Fills o from argv; 0, 1 for --help, or -1 after a message. */
static int
parse_options(int argc, char **argv, options *o)
{
	static const struct option longopts[] = {
		{"dbname", required_argument, NULL, 'd'},
		{"table", required_argument, NULL, 't'},
		{"model", required_argument, NULL, 'm'},
		{"limit", required_argument, NULL, 'n'},
		{"query", required_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	int			c;
	char	   *end;
	long		n;

	*o = (options) {
		.conninfo = "", .table = "ocr_images", .model = "minilm", .limit = "5"
	};
	while ((c = getopt_long(argc, argv, "d:t:m:n:q:h", longopts, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				o->conninfo = optarg;
				break;
			case 't':
				o->table = optarg;
				break;
			case 'm':
				o->model = optarg;
				break;
			case 'n':
				errno = 0;
				n = strtol(optarg, &end, 10);
				if (errno != 0 || end == optarg || *end != '\0' || n < 1 || n > INT_MAX)
				{
					fprintf(stderr, "%s: -n wants a positive number, not \"%s\"\n",
							PROGNAME, optarg);
					return -1;
				}
				o->limit = optarg;
				break;
			case 'q':
				if (o->nqueries == MAX_QUERIES)
				{
					fprintf(stderr, "%s: at most %d queries\n", PROGNAME, MAX_QUERIES);
					return -1;
				}
				o->queries[o->nqueries++] = optarg;
				break;
			case 'h':
				return 1;
			default:
				return -1;
		}
	}
	o->files = argv + optind;
	o->nfiles = argc - optind;
	if (o->nfiles == 0 && o->nqueries == 0)
	{
		fprintf(stderr, "%s: nothing to do: give image files, -q QUERY or both\n",
				PROGNAME);
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	options		o;
	PGconn	   *conn;
	char	   *table;
	int			rc;
	int			status = 1;

	rc = parse_options(argc, argv, &o);
	if (rc != 0)
	{
		usage(rc > 0 ? stdout : stderr);
		return rc > 0 ? 0 : 2;
	}

	conn = PQconnectdb(o.conninfo);
	if (conn == NULL)
	{
		fprintf(stderr, "%s: out of memory\n", PROGNAME);
		return 1;
	}
	if (PQstatus(conn) != CONNECTION_OK)
	{
		fprintf(stderr, "%s: cannot connect: %s", PROGNAME, PQerrorMessage(conn));
		PQfinish(conn);
		return 1;
	}
	PQsetNoticeReceiver(conn, show_warnings, NULL);
	/* the table name as a quoted identifier: any name, no SQL injection */
	table = PQescapeIdentifier(conn, o.table, strlen(o.table));
	if (table == NULL)
	{
		fprintf(stderr, "%s: bad table name: %s", PROGNAME, PQerrorMessage(conn));
		PQfinish(conn);
		return 1;
	}

	if (create_table(conn, table) != 0)
		goto done;
	if (o.nfiles > 0 && load_images(conn, &o, table) != 0)
	{
		fprintf(stderr, "%s: nothing was stored (the transaction is rolled back)\n",
				PROGNAME);
		goto done;
	}
	for (int i = 0; i < o.nqueries; i++)
		if (search(conn, table, o.model, o.queries[i], o.limit) != 0)
			goto done;
	status = 0;

done:
	PQfreemem(table);
	PQfinish(conn);				/* rolls back a transaction left open */
	return status;
}
