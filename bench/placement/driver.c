/*
 * driver.c
 *	  The scheduler benchmark's load generator (bench/placement): replays
 *	  precomputed open-loop job arrivals as SQL queries over many libpq
 *	  connections from one process, and writes each job's latency.
 *
 *	  placement-driver --conninfo STR --workflows FILE --arrivals FILE
 *					   --connections N --out FILE [--at-warmup CMD]
 *
 * workflows: make_profile.py's workflows.tsv (name, kind, input bytes,
 * the job's SQL over $1, best ms, root stage, the columns' stages); every connection prepares each
 * workflow's query as "wN".  arrivals: arrivals.py's lines (scheduled
 * arrival ms, workflow, input id), times already scaled.  A job starts
 * at its arrival on a free connection, or when one becomes free (open
 * loop: the arrivals never wait for completions, and the wait for a
 * connection counts in the latency, which is completion minus scheduled
 * arrival).  Every row that comes back is checked against the simulated
 * worker's placeholders ("sim:MODEL:HASH", docs/operations.md), computed
 * in SQL from the input at start-up; a job that errors or answers
 * otherwise is failed.
 *
 * --at-warmup: a shell command started (not waited for until the end)
 * when the warm-up jobs, the first WARMUP_FRACTION of them, have all
 * completed: bench.sh reads the workers' counters there.
 *
 * out: one line per job: index, workflow, input id, arrival ms, start ms,
 * done ms, latency ms, ok (1/0), and the error when failed.  Prints a
 * summary line to stdout.  Exit 0 when the run completed (even with failed
 * jobs), 1 on a setup error.
 *
 * Single-threaded: one poll() loop over the connections' sockets.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define MAX_WORKFLOWS 16
#define MAX_INPUTS 256
#define MAX_CONNS 256
/* workflows.json's warmup_fraction_dropped */
#define WARMUP_FRACTION 0.1

typedef struct workflow
{
	char		name[64];
	char		kind[16];
	char	   *sql;
	char		root[64];		/* stage the columns' calls read, or "-" */
	char		outs[256];		/* the columns' stages, comma-separated */
	/* expected answer per input id: the columns joined by '|' */
	char	   *expect[MAX_INPUTS + 1];
} workflow;

typedef struct job
{
	double		arrival;		/* ms from the start */
	int			wf;
	int			input;
	double		start;
	double		done;
	int			ok;
	char		err[256];
} job;

typedef struct conn
{
	PGconn	   *pg;
	int			job;			/* running job, -1 idle */
	int			bad;			/* the job failed already */
	int			rows;			/* rows seen of the job */
} conn;

static workflow wfs[MAX_WORKFLOWS];
static int	n_wfs;
static job *jobs;
static int	n_jobs;

/* Monotonic milliseconds. */
static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* Reads workflows.tsv; -1 with a message on stderr. */
static int
read_workflows(const char *path)
{
	FILE	   *f = fopen(path, "r");
	char		line[8192];

	if (f == NULL)
	{
		fprintf(stderr, "placement-driver: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL && n_wfs < MAX_WORKFLOWS)
	{
		workflow   *w = &wfs[n_wfs];
		char	   *save = NULL;
		char	   *name = strtok_r(line, "\t\n", &save);
		char	   *kind = strtok_r(NULL, "\t\n", &save);
		char	   *bytes = strtok_r(NULL, "\t\n", &save);
		char	   *sql = strtok_r(NULL, "\t\n", &save);
		char	   *best = strtok_r(NULL, "\t\n", &save);
		char	   *root = strtok_r(NULL, "\t\n", &save);
		char	   *outs = strtok_r(NULL, "\t\n", &save);

		if (name == NULL || kind == NULL || bytes == NULL || sql == NULL ||
			best == NULL || root == NULL || outs == NULL)
			continue;
		snprintf(w->root, sizeof(w->root), "%s", root);
		snprintf(w->outs, sizeof(w->outs), "%s", outs);
		snprintf(w->name, sizeof(w->name), "%s", name);
		snprintf(w->kind, sizeof(w->kind), "%s", kind);
		w->sql = strdup(sql);
		n_wfs++;
	}
	fclose(f);
	return n_wfs > 0 ? 0 : -1;
}

/* Reads the arrivals; -1 with a message on stderr. */
static int
read_arrivals(const char *path)
{
	FILE	   *f = fopen(path, "r");
	int			cap = 1024;
	double		t;
	int			w,
				in;

	if (f == NULL)
	{
		fprintf(stderr, "placement-driver: %s: %s\n", path, strerror(errno));
		return -1;
	}
	jobs = calloc((size_t) cap, sizeof(job));
	while (jobs != NULL && fscanf(f, "%lf %d %d", &t, &w, &in) == 3)
	{
		if (w < 0 || w >= n_wfs || in < 1 || in > MAX_INPUTS)
		{
			fprintf(stderr, "placement-driver: %s: bad job line %d\n", path, n_jobs + 1);
			fclose(f);
			return -1;
		}
		if (n_jobs == cap)
		{
			cap *= 2;
			jobs = realloc(jobs, (size_t) cap * sizeof(job));
			if (jobs == NULL)
				break;
		}
		memset(&jobs[n_jobs], 0, sizeof(job));
		jobs[n_jobs].arrival = t;
		jobs[n_jobs].wf = w;
		jobs[n_jobs].input = in;
		n_jobs++;
	}
	fclose(f);
	if (jobs == NULL)
	{
		fprintf(stderr, "placement-driver: out of memory\n");
		return -1;
	}
	return 0;
}

/*
 * The expected answers: for each workflow and input, the placeholders the
 * simulated worker gives (docs/operations.md), computed in SQL from the
 * input.  A stage over the input answers sim:STAGE:H, H the first 16 hex
 * digits of the SHA-256 of the input's bytes; a stage over the root
 * stage's answer hashes that answer's text instead.
 */
static int
load_expected(PGconn *pg)
{
	for (int w = 0; w < n_wfs; w++)
	{
		int			image = strcmp(wfs[w].kind, "image") == 0;
		const char *bytes = image ? "img" : "convert_to(body, 'UTF8')";
		char		cols[1024] = "";
		char		hash[512];
		char		q[4096];
		char		outs[256];
		char	   *save = NULL;
		PGresult   *r;

		snprintf(outs, sizeof(outs), "%s", wfs[w].outs);
		for (char *s = strtok_r(outs, ",", &save); s; s = strtok_r(NULL, ",", &save))
			snprintf(cols + strlen(cols), sizeof(cols) - strlen(cols),
					 "%s'sim:%s:' || h", cols[0] ? " || '|' || " : "", s);
		if (strcmp(wfs[w].root, "-") == 0)
			snprintf(hash, sizeof(hash), "left(encode(sha256(%s), 'hex'), 16)", bytes);
		else
			snprintf(hash, sizeof(hash),
					 "left(encode(sha256(convert_to('sim:%s:' || "
					 "left(encode(sha256(%s), 'hex'), 16), 'UTF8')), 'hex'), 16)",
					 wfs[w].root, bytes);
		snprintf(q, sizeof(q), "SELECT id, %s FROM (SELECT id, %s AS h FROM %s) x",
				 cols, hash, image ? "bench_images" : "bench_texts");
		r = PQexec(pg, q);
		if (PQresultStatus(r) != PGRES_TUPLES_OK)
		{
			fprintf(stderr, "placement-driver: expected answers of %s: %s  %s\n",
					wfs[w].name, PQerrorMessage(pg), q);
			PQclear(r);
			return -1;
		}
		for (int i = 0; i < PQntuples(r); i++)
		{
			int			id = atoi(PQgetvalue(r, i, 0));

			if (id >= 1 && id <= MAX_INPUTS)
				wfs[w].expect[id] = strdup(PQgetvalue(r, i, 1));
		}
		PQclear(r);
	}
	return 0;
}

/* Starts "sh -c cmd" without waiting for it; its pid, or -1. */
static pid_t
run_command(const char *cmd)
{
	pid_t		pid = fork();

	if (pid == 0)
	{
		execl("/bin/sh", "sh", "-c", cmd, (char *) NULL);
		_exit(127);
	}
	return pid;
}

/* Opens a connection and prepares every workflow; NULL on failure. */
static PGconn *
open_conn(const char *conninfo)
{
	PGconn	   *pg = PQconnectdb(conninfo);

	if (PQstatus(pg) != CONNECTION_OK)
	{
		fprintf(stderr, "placement-driver: connect: %s", PQerrorMessage(pg));
		PQfinish(pg);
		return NULL;
	}
	for (int w = 0; w < n_wfs; w++)
	{
		char		name[16];
		PGresult   *r;

		snprintf(name, sizeof(name), "w%d", w);
		r = PQprepare(pg, name, wfs[w].sql, 1, NULL);
		if (PQresultStatus(r) != PGRES_COMMAND_OK)
		{
			fprintf(stderr, "placement-driver: prepare %s: %s", wfs[w].name,
					PQerrorMessage(pg));
			PQclear(r);
			PQfinish(pg);
			return NULL;
		}
		PQclear(r);
	}
	return pg;
}

/* Checks one result row of job j against its expected answer. */
static void
check_row(conn *c, job *j, const PGresult *r, int i)
{
	char		got[1024] = "";
	const char *want = wfs[j->wf].expect[j->input];

	for (int k = 0; k < PQnfields(r); k++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s",
				 k ? "|" : "", PQgetisnull(r, i, k) ? "NULL" : PQgetvalue(r, i, k));
	if (want == NULL || strcmp(got, want) != 0)
	{
		c->bad = 1;
		snprintf(j->err, sizeof(j->err), "answer %s, expected %s", got,
				 want ? want : "(none)");
	}
}

int
main(int argc, char **argv)
{
	const char *conninfo = "",
			   *wf_path = NULL,
			   *arr_path = NULL,
			   *out_path = NULL;
	int			n_conns = 16;
	const char *at_warmup = NULL;
	int			warmup_left;
	pid_t		warmup_pid = -1;
	conn	   *conns;
	struct pollfd *pfd;
	int		   *pfd_conn;
	FILE	   *out;
	double		t0;
	int			next = 0,
				done = 0,
				failed = 0,
				running = 0;
	static const struct option opts[] = {
		{"conninfo", required_argument, NULL, 'c'},
		{"workflows", required_argument, NULL, 'w'},
		{"arrivals", required_argument, NULL, 'a'},
		{"connections", required_argument, NULL, 'n'},
		{"out", required_argument, NULL, 'o'},
		{"at-warmup", required_argument, NULL, 'x'},
		{NULL, 0, NULL, 0}
	};
	int			o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1)
	{
		switch (o)
		{
			case 'c':
				conninfo = optarg;
				break;
			case 'w':
				wf_path = optarg;
				break;
			case 'a':
				arr_path = optarg;
				break;
			case 'n':
				n_conns = atoi(optarg);
				break;
			case 'o':
				out_path = optarg;
				break;
			case 'x':
				at_warmup = optarg;
				break;
			default:
				return 1;
		}
	}
	if (wf_path == NULL || arr_path == NULL || out_path == NULL ||
		n_conns < 1 || n_conns > MAX_CONNS)
	{
		fprintf(stderr, "usage: placement-driver --conninfo STR --workflows FILE "
				"--arrivals FILE --connections N (1..%d) --out FILE\n", MAX_CONNS);
		return 1;
	}
	if (read_workflows(wf_path) != 0 || read_arrivals(arr_path) != 0)
		return 1;
	conns = calloc((size_t) n_conns, sizeof(conn));
	pfd = calloc((size_t) n_conns, sizeof(struct pollfd));
	pfd_conn = calloc((size_t) n_conns, sizeof(int));
	if (conns == NULL || pfd == NULL || pfd_conn == NULL)
		return 1;
	for (int i = 0; i < n_conns; i++)
	{
		conns[i].pg = open_conn(conninfo);
		conns[i].job = -1;
		if (conns[i].pg == NULL)
			return 1;
	}
	if (load_expected(conns[0].pg) != 0)
		return 1;

	/* the first WARMUP_FRACTION of the jobs (by arrival) are the warm-up */
	warmup_left = (int) (n_jobs * WARMUP_FRACTION);
	t0 = now_ms() + 100;
	while (done < n_jobs)
	{
		double		now = now_ms() - t0;
		int			np = 0;
		int			timeout = 1000;

		/* start every due job on a free connection, in arrival order */
		for (int i = 0; i < n_conns && next < n_jobs && jobs[next].arrival <= now; i++)
		{
			conn	   *c = &conns[i];
			job		   *j = &jobs[next];
			char		name[16],
						id[16];
			const char *params[1] = {id};

			if (c->job >= 0)
				continue;
			snprintf(name, sizeof(name), "w%d", j->wf);
			snprintf(id, sizeof(id), "%d", j->input);
			j->start = now;
			if (!PQsendQueryPrepared(c->pg, name, 1, params, NULL, NULL, 0))
			{
				snprintf(j->err, sizeof(j->err), "send: %s", PQerrorMessage(c->pg));
				j->done = now;
				done++;
				failed++;
				next++;
				continue;
			}
			c->job = next++;
			c->bad = 0;
			c->rows = 0;
			running++;
		}
		if (next < n_jobs && running < n_conns)
		{
			double		left = jobs[next].arrival - (now_ms() - t0);

			timeout = left <= 0 ? 0 : (int) left + 1;
		}
		for (int i = 0; i < n_conns; i++)
			if (conns[i].job >= 0)
			{
				pfd[np].fd = PQsocket(conns[i].pg);
				pfd[np].events = POLLIN;
				pfd[np].revents = 0;
				pfd_conn[np++] = i;
			}
		if (poll(pfd, (nfds_t) np, timeout) < 0 && errno != EINTR)
		{
			perror("placement-driver: poll");
			return 1;
		}
		for (int k = 0; k < np; k++)
		{
			conn	   *c = &conns[pfd_conn[k]];
			job		   *j = &jobs[c->job];
			PGresult   *r;

			if (pfd[k].revents == 0)
				continue;
			if (!PQconsumeInput(c->pg))
			{
				c->bad = 1;
				snprintf(j->err, sizeof(j->err), "%s", PQerrorMessage(c->pg));
			}
			while (!PQisBusy(c->pg) && (r = PQgetResult(c->pg)) != NULL)
			{
				if (PQresultStatus(r) == PGRES_TUPLES_OK)
				{
					for (int i = 0; i < PQntuples(r); i++)
						check_row(c, j, r, i);
					c->rows += PQntuples(r);
				}
				else if (!c->bad)
				{
					c->bad = 1;
					snprintf(j->err, sizeof(j->err), "%s",
							 PQresultErrorMessage(r));
				}
				PQclear(r);
			}
			if (!PQisBusy(c->pg))
			{
				j->done = now_ms() - t0;
				if (c->rows != 1 && !c->bad)
				{
					c->bad = 1;
					snprintf(j->err, sizeof(j->err), "%d rows, expected 1", c->rows);
				}
				j->ok = !c->bad;
				failed += !j->ok;
				done++;
				if (c->job < (int) (n_jobs * WARMUP_FRACTION) && --warmup_left == 0 &&
					at_warmup != NULL)
					warmup_pid = run_command(at_warmup);
				running--;
				c->job = -1;
				if (PQstatus(c->pg) != CONNECTION_OK)
					PQreset(c->pg);
			}
		}
	}

	if (warmup_pid > 0)
		waitpid(warmup_pid, NULL, 0);
	out = fopen(out_path, "w");
	if (out == NULL)
	{
		fprintf(stderr, "placement-driver: %s: %s\n", out_path, strerror(errno));
		return 1;
	}
	for (int i = 0; i < n_jobs; i++)
	{
		job		   *j = &jobs[i];

		for (char *e = j->err; *e; e++)
			if (*e == '\n' || *e == '\t')
				*e = ' ';
		fprintf(out, "%d\t%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%d\t%s\n", i,
				wfs[j->wf].name, j->input, j->arrival, j->start, j->done,
				j->done - j->arrival, j->ok, j->err);
	}
	fclose(out);
	printf("placement-driver: %d jobs, %d failed, %.1f s\n", n_jobs, failed,
		   (now_ms() - t0) / 1000.0);
	for (int i = 0; i < n_conns; i++)
		PQfinish(conns[i].pg);
	return 0;
}
