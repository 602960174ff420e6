/*
 * driver.c
 *	  The soak benchmark's load generator (bench/soak): CLIENTS libpq
 *	  connections that loop ML queries for DURATION seconds, every answer
 *	  checked row by row against a reference made at start, a worker
 *	  restart halfway, and the resident memory of the processes sampled.
 *
 *	  soak-driver --conninfo STR --workers FILE [--clients N] [--duration S]
 *				  [--warmup S] [--restart-at S --restart-cmd CMD] [--grace S]
 *				  [--windows N] [--max-growth X] [--log FILE]
 *
 * The queries (KINDS below) read the tables soak_texts (id, grp, body) and
 * soak_images (id, grp, img) that bench.sh fills; each takes one group
 * ($1) of rows.  The reference: each kind over each group, run once on the
 * first connection before the load, with sanity checks (no NULL, 384
 * values of an embedding, the row-at-a-time path agreeing with the batched
 * one).  Under load every query's rows are compared with it: each id of the
 * group exactly once, every column equal (a real[] to within FLOAT_TOL per
 * value: a batch's makeup may move the last bits; the largest difference
 * of the values found equal is printed).  A query that succeeds
 * without the right rows has lost rows; one that fails is an error.
 *
 * --restart-cmd: a shell command started (not waited for) at --restart-at
 * seconds; it kills a worker and starts it again, and exits once the
 * worker is up.  A query that overlaps [start of the command, its exit +
 * --grace] counts in the restart window.
 *
 * Memory: VmRSS and RssAnon (/proc/PID/status) of every backend
 * (pg_backend_pid), of the pool monitor, and of the workers named in
 * --workers ("NAME PID" lines, read again at each sample: the restart
 * command rewrites it) at start, after --warmup seconds, --warmup seconds
 * after the restart command exited, and at --duration (still under load,
 * as after the warm-up).  A process's growth is its VmRSS at the end over
 * its VmRSS at its first sample after a warm-up.
 *
 * Prints the tables and ends with the RESULT line.  Exit 0 when no row was
 * lost, no error came outside the restart window, no connection was lost
 * and every growth is under --max-growth; 1 otherwise or on a setup error.
 *
 * Single-threaded: one poll() loop over the connections' sockets.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define MAX_CONNS 64
#define MAX_GROUPS 64
#define MAX_PROCS 128
#define FLOAT_TOL 1e-4
#define EMBED_DIM 384

/* the queries; $1 is the group */
typedef struct kind
{
	const char *name;
	const char *sql;
	int			images;			/* over soak_images, else soak_texts */
	int			embed_col;		/* the column of an embedding, 0: none */
} kind;

/* the kinds' indexes in KINDS */
enum
{
	K_EMBED, K_CLASSIFY_EMBED, K_IMAGE_CLASSIFY, K_IMAGE_PREDICT, K_ROW_AT_A_TIME
};

static const kind KINDS[] = {
	{"embed",
	 "SELECT id, infer.embed('minilm', body) FROM soak_texts WHERE grp = $1", 0, 1},
	{"classify+embed",
	 "SELECT id, infer.classify('prompt_task', body), infer.embed('minilm', body) "
	 "FROM soak_texts WHERE grp = $1", 0, 2},
	{"image_classify",
	 "SELECT id, infer.classify('ppocr_cls', img) FROM soak_images WHERE grp = $1", 1, 0},
	{"image_predict",
	 "SELECT id, infer.predict('ppocr_cls', img) FROM soak_images WHERE grp = $1", 1, 0},
	/* inside CASE the call runs one row at a time (docs/sql.md) */
	{"row_at_a_time",
	 "SELECT id, CASE WHEN id > 0 THEN infer.classify('prompt_task', body) END "
	 "FROM soak_texts WHERE grp = $1", 0, 0},
};
#define N_KINDS ((int) (sizeof(KINDS) / sizeof(KINDS[0])))

/* the memory samples */
enum
{
	S_START, S_WARM, S_REWARM, S_END, N_SAMPLES
};
static const char *const SAMPLE_NAMES[N_SAMPLES] = {"start", "warm", "rewarm", "end"};

typedef struct proc
{
	char		name[32];
	int			pid;
	long		rss[N_SAMPLES]; /* kB, -1 not sampled or gone */
	long		anon[N_SAMPLES];
} proc;

/* one query under load */
typedef struct query
{
	double		start;			/* s from t0 */
	double		end;
	int			client;
	int			kind;
	int			grp;
	int			ok;				/* answered without an error */
	int			rows;			/* rows that matched the reference */
	int			lost;			/* of an answered query: missing, wrong or extra */
	char		err[160];
} query;

typedef struct conn
{
	PGconn	   *pg;
	int			proc;			/* index in procs */
	int			busy;
	int			iter;
	query		q;
	int			lost_conn;		/* the connection broke during the query */
} conn;

static PGresult *ref[N_KINDS][MAX_GROUPS];
static int	n_groups[2];		/* texts, images */
static proc procs[MAX_PROCS];
static int	n_procs;
static query *queries;
static int	n_queries,
			cap_queries;
static double max_diff;			/* largest real[] difference found equal */
static const char *workers_path;

/* Monotonic seconds. */
static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The entry of (name, pid), made when new; NULL when the table is full. */
static proc *
proc_get(const char *name, int pid)
{
	for (int i = 0; i < n_procs; i++)
		if (procs[i].pid == pid && strcmp(procs[i].name, name) == 0)
			return &procs[i];
	if (n_procs == MAX_PROCS)
		return NULL;
	snprintf(procs[n_procs].name, sizeof(procs[n_procs].name), "%s", name);
	procs[n_procs].pid = pid;
	for (int s = 0; s < N_SAMPLES; s++)
		procs[n_procs].rss[s] = procs[n_procs].anon[s] = -1;
	return &procs[n_procs++];
}

/* VmRSS and RssAnon of pid in kB from /proc/PID/status; -1 when gone. */
static void
read_rss(int pid, long *rss, long *anon)
{
	char		path[64],
				line[256];
	FILE	   *f;

	*rss = *anon = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL)
	{
		if (strncmp(line, "VmRSS:", 6) == 0)
			*rss = strtol(line + 6, NULL, 10);
		else if (strncmp(line, "RssAnon:", 8) == 0)
			*anon = strtol(line + 8, NULL, 10);
	}
	fclose(f);
}

/*
 * Takes sample s: the backends and the monitor (already in procs) and
 * the workers of the workers file as it is now.  A process gone stays -1.
 */
static void
sample(int s)
{
	FILE	   *f = fopen(workers_path, "r");
	char		name[32];
	int			pid;

	if (f != NULL)
	{
		while (fscanf(f, "%31s %d", name, &pid) == 2)
		{
			char		label[40];

			snprintf(label, sizeof(label), "worker %s", name);
			proc_get(label, pid);
		}
		fclose(f);
	}
	for (int i = 0; i < n_procs; i++)
		read_rss(procs[i].pid, &procs[i].rss[s], &procs[i].anon[s]);
}

/* Runs one statement; its PGresult or NULL with a message on stderr. */
static PGresult *
exec_ok(PGconn *pg, const char *sql, int n, const char *const *params)
{
	PGresult   *r = PQexecParams(pg, sql, n, NULL, params, NULL, NULL, 0);

	if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
	{
		fprintf(stderr, "soak-driver: %s: %s", sql, PQerrorMessage(pg));
		PQclear(r);
		return NULL;
	}
	return r;
}

/* Opens a connection, prepares every kind as "kN"; NULL on failure. */
static PGconn *
open_conn(const char *conninfo)
{
	PGconn	   *pg = PQconnectdb(conninfo);

	if (PQstatus(pg) != CONNECTION_OK)
	{
		fprintf(stderr, "soak-driver: connect: %s", PQerrorMessage(pg));
		PQfinish(pg);
		return NULL;
	}
	for (int k = 0; k < N_KINDS; k++)
	{
		char		name[8];
		PGresult   *r;

		snprintf(name, sizeof(name), "k%d", k);
		r = PQprepare(pg, name, KINDS[k].sql, 1, NULL);
		if (PQresultStatus(r) != PGRES_COMMAND_OK)
		{
			fprintf(stderr, "soak-driver: prepare %s: %s", KINDS[k].name, PQerrorMessage(pg));
			PQclear(r);
			PQfinish(pg);
			return NULL;
		}
		PQclear(r);
	}
	return pg;
}

/* The backend's pid, or -1. */
static int
backend_pid(PGconn *pg)
{
	PGresult   *r = exec_ok(pg, "SELECT pg_backend_pid()", 0, NULL);
	int			pid = -1;

	if (r != NULL)
	{
		pid = atoi(PQgetvalue(r, 0, 0));
		PQclear(r);
	}
	return pid;
}

/*
 * Compares one value with its reference: text exactly, a real[] ("{...}")
 * value by value to within FLOAT_TOL (max_diff keeps the largest
 * difference).  1 when equal.
 */
static int
same_value(const char *got, const char *want)
{
	const char *g = got + 1,
			   *w = want + 1;
	double		most = 0;

	if (want[0] != '{' || got[0] != '{')
		return strcmp(got, want) == 0;
	while (*g != '}' && *w != '}')
	{
		char	   *ge,
				   *we;
		double		a = strtod(g, &ge),
					b = strtod(w, &we),
					d;

		if (ge == g || we == w)
			return 0;
		d = fabs(a - b);
		if (!(d <= FLOAT_TOL))
			return 0;
		if (d > most)
			most = d;
		g = ge + (*ge == ',');
		w = we + (*we == ',');
	}
	if (*g != '}' || *w != '}')
		return 0;
	if (most > max_diff)
		max_diff = most;
	return 1;
}

/* The row of r whose first column is id, or -1. */
static int
find_row(const PGresult *r, const char *id)
{
	for (int i = 0; i < PQntuples(r); i++)
		if (strcmp(PQgetvalue(r, i, 0), id) == 0)
			return i;
	return -1;
}

/*
 * Checks the answer r of query q (its kind over its group) against the
 * reference: sets
 * q->rows (rows found, right) and q->lost (reference rows missing or
 * wrong, plus rows that are not in the reference or come twice).
 */
static void
check_answer(query *q, const PGresult *r)
{
	const PGresult *want = ref[q->kind][q->grp];
	int			n_want = PQntuples(want);
	char		seen[256] = {0};

	if (PQnfields(r) != PQnfields(want))
	{
		q->lost += n_want;
		snprintf(q->err, sizeof(q->err), "%d columns, expected %d", PQnfields(r),
				 PQnfields(want));
		return;
	}
	for (int i = 0; i < PQntuples(r); i++)
	{
		int			j = find_row(want, PQgetvalue(r, i, 0));
		int			right = 1;

		if (j < 0 || seen[j])
		{
			q->lost++;
			snprintf(q->err, sizeof(q->err), "row id %s %s", PQgetvalue(r, i, 0),
					 j < 0 ? "not in the group" : "twice");
			continue;
		}
		seen[j] = 1;
		for (int c = 1; c < PQnfields(r) && right; c++)
			right = !PQgetisnull(r, i, c) &&
				same_value(PQgetvalue(r, i, c), PQgetvalue(want, j, c));
		if (right)
			q->rows++;
		else
		{
			q->lost++;
			snprintf(q->err, sizeof(q->err), "row id %s: wrong answer",
					 PQgetvalue(r, i, 0));
		}
	}
	for (int j = 0; j < n_want; j++)
		if (!seen[j])
		{
			q->lost++;
			snprintf(q->err, sizeof(q->err), "row id %s missing", PQgetvalue(want, j, 0));
		}
}

/*
 * Runs every kind over every group once on pg and keeps the answers as the
 * reference; checks them for sense.  -1 with a message on stderr.
 */
static int
make_reference(PGconn *pg)
{
	for (int t = 0; t < 2; t++)
	{
		PGresult   *r = exec_ok(pg, t ? "SELECT count(DISTINCT grp), min(grp), max(grp) FROM soak_images"
							  : "SELECT count(DISTINCT grp), min(grp), max(grp) FROM soak_texts",
							  0, NULL);

		if (r == NULL)
			return -1;
		n_groups[t] = atoi(PQgetvalue(r, 0, 0));
		if (n_groups[t] < 1 || n_groups[t] > MAX_GROUPS || atoi(PQgetvalue(r, 0, 1)) != 0 ||
			atoi(PQgetvalue(r, 0, 2)) != n_groups[t] - 1)
		{
			fprintf(stderr, "soak-driver: the groups must be 0 to N-1 (N <= %d)\n", MAX_GROUPS);
			PQclear(r);
			return -1;
		}
		PQclear(r);
	}
	for (int k = 0; k < N_KINDS; k++)
		for (int g = 0; g < n_groups[KINDS[k].images]; g++)
		{
			char		grp[16];
			const char *params[1] = {grp};
			PGresult   *r;

			snprintf(grp, sizeof(grp), "%d", g);
			r = exec_ok(pg, KINDS[k].sql, 1, params);
			if (r == NULL)
				return -1;
			if (PQntuples(r) < 1 || PQntuples(r) > 256)
			{
				fprintf(stderr, "soak-driver: reference %s group %d: %d rows (1 to 256)\n",
						KINDS[k].name, g, PQntuples(r));
				return -1;
			}
			for (int i = 0; i < PQntuples(r); i++)
				for (int c = 1; c < PQnfields(r); c++)
				{
					const char *v = PQgetvalue(r, i, c);
					int			commas = 0;

					for (const char *p = v; *p; p++)
						commas += *p == ',';
					if (PQgetisnull(r, i, c) || v[0] == '\0' ||
						(c == KINDS[k].embed_col && commas != EMBED_DIM - 1))
					{
						fprintf(stderr, "soak-driver: reference %s group %d row %d: "
								"unexpected value \"%.40s\"\n", KINDS[k].name, g, i, v);
						return -1;
					}
				}
			ref[k][g] = r;
		}
	/* the row-at-a-time labels are the batched ones (classify+embed) */
	for (int g = 0; g < n_groups[0]; g++)
	{
		PGresult   *batched = ref[K_CLASSIFY_EMBED][g];
		PGresult   *one = ref[K_ROW_AT_A_TIME][g];
		int			same = PQntuples(batched) == PQntuples(one);

		for (int i = 0; same && i < PQntuples(batched); i++)
		{
			int			j = find_row(one, PQgetvalue(batched, i, 0));

			same = j >= 0 && strcmp(PQgetvalue(batched, i, 1), PQgetvalue(one, j, 1)) == 0;
		}
		if (!same)
		{
			fprintf(stderr, "soak-driver: reference group %d: the row-at-a-time labels "
					"differ from the batched ones\n", g);
			return -1;
		}
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

/* Sends the next query of connection c (client i). */
static void
send_next(conn *c, int i, double t)
{
	char		name[8],
				grp[16];
	const char *params[1] = {grp};
	int			k = (i + c->iter) % N_KINDS;
	int			n = n_groups[KINDS[k].images];

	memset(&c->q, 0, sizeof(c->q));
	c->q.client = i;
	c->q.kind = k;
	c->q.grp = (i * 7 + c->iter / N_KINDS) % n;
	c->q.start = t;
	c->iter++;
	snprintf(name, sizeof(name), "k%d", k);
	snprintf(grp, sizeof(grp), "%d", c->q.grp);
	c->lost_conn = 0;
	if (!PQsendQueryPrepared(c->pg, name, 1, params, NULL, NULL, 0))
	{
		snprintf(c->q.err, sizeof(c->q.err), "send: %s", PQerrorMessage(c->pg));
		c->q.end = t;
		c->busy = 0;
		c->lost_conn = 1;
		return;
	}
	c->busy = 1;
}

/* Keeps a finished query. */
static void
keep_query(const query *q)
{
	if (n_queries == cap_queries)
	{
		cap_queries = cap_queries ? cap_queries * 2 : 4096;
		queries = realloc(queries, (size_t) cap_queries * sizeof(query));
		if (queries == NULL)
		{
			fprintf(stderr, "soak-driver: out of memory\n");
			exit(1);
		}
	}
	queries[n_queries++] = *q;
}

/*
 * Reads what connection c has; when its query is complete, checks and
 * keeps it and marks c idle.
 */
static void
consume(conn *c, double t)
{
	PGresult   *r;

	if (!PQconsumeInput(c->pg))
		c->lost_conn = 1;
	while (!PQisBusy(c->pg) && (r = PQgetResult(c->pg)) != NULL)
	{
		if (PQresultStatus(r) == PGRES_TUPLES_OK)
		{
			c->q.ok = 1;
			check_answer(&c->q, r);
		}
		else
		{
			char	   *e;

			c->q.ok = 0;
			snprintf(c->q.err, sizeof(c->q.err), "%s", PQresultErrorMessage(r));
			for (e = c->q.err; *e; e++)
				if (*e == '\n' || *e == '\t')
					*e = ' ';
		}
		PQclear(r);
	}
	if (PQstatus(c->pg) != CONNECTION_OK)
		c->lost_conn = 1;
	if (!PQisBusy(c->pg) || c->lost_conn)
	{
		c->q.end = t;
		if (c->lost_conn)
			c->q.ok = 0;
		keep_query(&c->q);
		c->busy = 0;
	}
}

/* VmRSS at the end over the process's first sample after a warm-up. */
static double
growth(const proc *p)
{
	long		base = p->rss[S_WARM] > 0 ? p->rss[S_WARM] : p->rss[S_REWARM];

	if (base <= 0 || p->rss[S_END] <= 0)
		return -1;
	return (double) p->rss[S_END] / (double) base;
}

/* Prints one kB figure, or "-". */
static void
print_kb(long kb)
{
	if (kb < 0)
		printf(" %9s", "-");
	else
		printf(" %9ld", kb);
}

int
main(int argc, char **argv)
{
	const char *conninfo = "",
			   *restart_cmd = NULL,
			   *log_path = NULL;
	int			n_conns = 8,
				n_windows = 10;
	double		duration = 600,
				warmup = -1,
				restart_at = -1,
				grace = 5,
				max_growth = 1.05;
	conn	   *conns;
	struct pollfd pfd[MAX_CONNS];
	int			pfd_conn[MAX_CONNS];
	double		t0,
				t_kill = -1,
				t_back = -1;
	pid_t		restart_pid = -1;
	int			restart_status = -1,
				taken[N_SAMPLES] = {0},
				stopping = 0,
				reconnects = 0;
	long		n_rows = 0,
				lost_rows = 0,
				failed_rows = 0,
				err_in = 0,
				err_out = 0,
				q_in = 0;
	double		g_backend = 0,
				g_worker = 0,
				g_monitor = 0;
	int			verdict = 0;
	static const struct option opts[] = {
		{"conninfo", required_argument, NULL, 'c'},
		{"workers", required_argument, NULL, 'w'},
		{"clients", required_argument, NULL, 'n'},
		{"duration", required_argument, NULL, 'd'},
		{"warmup", required_argument, NULL, 'u'},
		{"restart-at", required_argument, NULL, 'r'},
		{"restart-cmd", required_argument, NULL, 'x'},
		{"grace", required_argument, NULL, 'g'},
		{"windows", required_argument, NULL, 'W'},
		{"max-growth", required_argument, NULL, 'm'},
		{"log", required_argument, NULL, 'l'},
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
				workers_path = optarg;
				break;
			case 'n':
				n_conns = atoi(optarg);
				break;
			case 'd':
				duration = atof(optarg);
				break;
			case 'u':
				warmup = atof(optarg);
				break;
			case 'r':
				restart_at = atof(optarg);
				break;
			case 'x':
				restart_cmd = optarg;
				break;
			case 'g':
				grace = atof(optarg);
				break;
			case 'W':
				n_windows = atoi(optarg);
				break;
			case 'm':
				max_growth = atof(optarg);
				break;
			case 'l':
				log_path = optarg;
				break;
			default:
				return 1;
		}
	}
	if (workers_path == NULL || n_conns < 1 || n_conns > MAX_CONNS || duration <= 0 ||
		n_windows < 1 || n_windows > 100)
	{
		fprintf(stderr, "usage: soak-driver --conninfo STR --workers FILE [--clients N (1..%d)] "
				"[--duration S] [--warmup S] [--restart-at S --restart-cmd CMD] [--grace S] "
				"[--windows N] [--max-growth X] [--log FILE]\n", MAX_CONNS);
		return 1;
	}
	if (warmup < 0)
		warmup = duration / 10;
	if (restart_at < 0)
		restart_at = duration / 2;
	if (restart_cmd == NULL)
		restart_at = -1;

	conns = calloc((size_t) n_conns, sizeof(conn));
	if (conns == NULL)
		return 1;
	for (int i = 0; i < n_conns; i++)
	{
		char		name[32];
		proc	   *p;

		conns[i].pg = open_conn(conninfo);
		if (conns[i].pg == NULL)
			return 1;
		snprintf(name, sizeof(name), "backend %d", i + 1);
		p = proc_get(name, backend_pid(conns[i].pg));
		if (p == NULL || p->pid < 0)
			return 1;
		conns[i].proc = (int) (p - procs);
	}
	{
		PGresult   *r = exec_ok(conns[0].pg, "SELECT pid FROM pg_stat_activity "
								"WHERE backend_type = 'pg_infer pool monitor'", 0, NULL);

		if (r == NULL)
			return 1;
		for (int i = 0; i < PQntuples(r); i++)
			proc_get("pool monitor", atoi(PQgetvalue(r, i, 0)));
		PQclear(r);
	}
	printf("soak: making the reference (every query kind over every group once)\n");
	fflush(stdout);
	if (make_reference(conns[0].pg) != 0)
		return 1;
	printf("soak: %d clients, %.0f s, warm-up %.0f s, %d text groups, %d image groups, "
		   "%d query kinds; ", n_conns, duration, warmup, n_groups[0], n_groups[1], N_KINDS);
	if (restart_at >= 0)
		printf("restart at %.0f s\n", restart_at);
	else
		printf("no restart\n");
	fflush(stdout);

	sample(S_START);
	taken[S_START] = 1;
	t0 = now_s();
	for (;;)
	{
		double		t = now_s() - t0;
		int			np = 0,
					any_busy = 0;

		if (!taken[S_WARM] && t >= warmup)
		{
			sample(S_WARM);
			taken[S_WARM] = 1;
		}
		if (restart_at >= 0 && t_kill < 0 && t >= restart_at)
		{
			t_kill = t;
			printf("soak: %.1f s: restart command started\n", t);
			fflush(stdout);
			restart_pid = run_command(restart_cmd);
		}
		if (restart_pid > 0 && t_back < 0)
		{
			int			st;

			if (waitpid(restart_pid, &st, WNOHANG) == restart_pid)
			{
				t_back = t;
				restart_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
				printf("soak: %.1f s: restart command done (exit %d)\n", t, restart_status);
				fflush(stdout);
			}
		}
		if (t_back >= 0 && !taken[S_REWARM] && t >= t_back + warmup && t < duration)
		{
			sample(S_REWARM);
			taken[S_REWARM] = 1;
		}
		if (!stopping && t >= duration)
		{
			sample(S_END);
			taken[S_END] = 1;
			stopping = 1;
		}
		for (int i = 0; i < n_conns; i++)
		{
			conn	   *c = &conns[i];

			if (!c->busy && !stopping)
			{
				send_next(c, i, t);
				if (!c->busy)
					keep_query(&c->q);
			}
			if (!c->busy && c->lost_conn)
			{
				char		name[32];
				proc	   *p;

				/* a backend that went away: count it, start a new one */
				PQfinish(c->pg);
				c->pg = open_conn(conninfo);
				if (c->pg == NULL)
					return 1;
				reconnects++;
				c->lost_conn = 0;
				snprintf(name, sizeof(name), "backend %d", i + 1);
				p = proc_get(name, backend_pid(c->pg));
				if (p != NULL)
					c->proc = (int) (p - procs);
			}
			if (c->busy)
			{
				pfd[np].fd = PQsocket(c->pg);
				pfd[np].events = POLLIN;
				pfd[np].revents = 0;
				pfd_conn[np++] = i;
				any_busy = 1;
			}
		}
		if (stopping && !any_busy && (restart_pid < 0 || t_back >= 0))
			break;
		if (poll(pfd, (nfds_t) np, 100) < 0 && errno != EINTR)
		{
			perror("soak-driver: poll");
			return 1;
		}
		t = now_s() - t0;
		for (int k = 0; k < np; k++)
			if (pfd[k].revents != 0)
				consume(&conns[pfd_conn[k]], t);
	}

	/* --- the figures --- */
	{
		double		win = duration / n_windows;
		double		w_end = t_back >= 0 ? t_back + grace : -1;

		printf("\n%-13s %8s %9s %7s %8s\n", "window (s)", "queries", "rows", "errors", "q/s");
		for (int w = 0; w < n_windows; w++)
		{
			long		nq = 0,
						nr = 0,
						ne = 0;
			double		lo = w * win,
						hi = (w + 1) * win;

			for (int i = 0; i < n_queries; i++)
			{
				query	   *q = &queries[i];

				if (q->start >= lo && (q->start < hi || (w == n_windows - 1)))
				{
					nq++;
					nr += q->rows;
					ne += !q->ok;
				}
			}
			printf("%5.0f-%-7.0f %8ld %9ld %7ld %8.1f\n", lo, hi, nq, nr, ne, nq / win);
		}
		for (int i = 0; i < n_queries; i++)
		{
			query	   *q = &queries[i];
			int			in = t_kill >= 0 && q->end >= t_kill &&
				(w_end < 0 || q->start <= w_end);

			n_rows += q->rows;
			q_in += in;
			if (q->ok)
				lost_rows += q->lost;
			else
			{
				failed_rows += PQntuples(ref[q->kind][q->grp]);
				if (in)
					err_in++;
				else
					err_out++;
			}
		}
		printf("\n%-16s %8s %9s %7s %7s\n", "query kind", "queries", "rows", "errors", "lost");
		for (int k = 0; k < N_KINDS; k++)
		{
			long		nq = 0,
						nr = 0,
						ne = 0,
						nl = 0;

			for (int i = 0; i < n_queries; i++)
				if (queries[i].kind == k)
				{
					nq++;
					nr += queries[i].rows;
					ne += !queries[i].ok;
					nl += queries[i].ok ? queries[i].lost : 0;
				}
			printf("%-16s %8ld %9ld %7ld %7ld\n", KINDS[k].name, nq, nr, ne, nl);
		}
		if (t_kill >= 0)
			printf("\nrestart window: %.1f s to %.1f s (command %.1f-%.1f s, exit %d, "
				   "then %.0f s grace): %ld queries, %ld errors\n", t_kill, w_end, t_kill,
				   t_back, restart_status, grace, q_in, err_in);
		/* the first errors, and every lost row */
		{
			int			shown = 0;

			for (int i = 0; i < n_queries && shown < 10; i++)
			{
				query	   *q = &queries[i];

				if (!q->ok || q->lost > 0)
				{
					printf("  %s at %.1f-%.1f s, client %d, %s group %d: %s\n",
						   q->ok ? "LOST ROWS" : "error", q->start, q->end, q->client + 1,
						   KINDS[q->kind].name, q->grp, q->err);
					shown++;
				}
			}
		}
	}

	printf("\n%-22s %8s", "process", "pid");
	for (int s = 0; s < N_SAMPLES; s++)
		printf(" %9s", SAMPLE_NAMES[s]);
	printf(" %9s %7s\n", "anon_end", "growth");
	for (int i = 0; i < n_procs; i++)
	{
		proc	   *p = &procs[i];
		double		gr = growth(p);

		printf("%-22s %8d", p->name, p->pid);
		for (int s = 0; s < N_SAMPLES; s++)
			print_kb(p->rss[s]);
		print_kb(p->anon[S_END]);
		if (gr > 0)
			printf(" %7.3f\n", gr);
		else
			printf(" %7s\n", "-");
		if (strncmp(p->name, "backend", 7) == 0 && gr > g_backend)
			g_backend = gr;
		else if (strncmp(p->name, "worker", 6) == 0 && gr > g_worker)
			g_worker = gr;
		else if (strcmp(p->name, "pool monitor") == 0 && gr > g_monitor)
			g_monitor = gr;
	}
	printf("(kB of VmRSS; warm = after %.0f s of load, rewarm = %.0f s after the restart, "
		   "end = at %.0f s under load; growth = end / the first of warm, rewarm)\n",
		   warmup, warmup, duration);
	printf("real[] answers equal to the reference within %.0e a value (largest difference "
		   "among them %.2e)\n", FLOAT_TOL, max_diff);

	if (log_path != NULL)
	{
		FILE	   *f = fopen(log_path, "w");

		if (f == NULL)
		{
			fprintf(stderr, "soak-driver: %s: %s\n", log_path, strerror(errno));
			return 1;
		}
		for (int i = 0; i < n_queries; i++)
		{
			query	   *q = &queries[i];

			fprintf(f, "%.3f\t%.3f\t%d\t%s\t%d\t%d\t%d\t%d\t%s\n", q->start, q->end,
					q->client + 1, KINDS[q->kind].name, q->grp, q->ok, q->rows, q->lost,
					q->err);
		}
		fclose(f);
	}

	if (lost_rows > 0)
	{
		printf("soak: FAIL: %ld rows lost (answered queries without the right rows)\n", lost_rows);
		verdict = 1;
	}
	if (err_out > 0)
	{
		printf("soak: FAIL: %ld errors outside the restart window\n", err_out);
		verdict = 1;
	}
	if (reconnects > 0)
	{
		printf("soak: FAIL: %d connections lost\n", reconnects);
		verdict = 1;
	}
	if (restart_at >= 0 && restart_status != 0)
	{
		printf("soak: FAIL: the restart command failed (exit %d)\n", restart_status);
		verdict = 1;
	}
	if (g_backend <= 0 || g_worker <= 0 || g_backend >= max_growth || g_worker >= max_growth ||
		g_monitor >= max_growth)
	{
		printf("soak: FAIL: resident memory growth at or over %.3f (or not measured)\n",
			   max_growth);
		verdict = 1;
	}
	printf("RESULT: backend_rss_growth=%.3f worker_rss_growth=%.3f monitor_rss_growth=%.3f "
		   "lost_rows=%ld errors_outside_restart=%ld errors_in_restart=%ld failed_rows=%ld "
		   "reconnects=%d queries=%d rows=%ld duration_s=%.0f\n", g_backend, g_worker, g_monitor,
		   lost_rows, err_out, err_in, failed_rows, reconnects, n_queries, n_rows, duration);
	for (int i = 0; i < n_conns; i++)
		PQfinish(conns[i].pg);
	return verdict;
}
