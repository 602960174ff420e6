/*
 * conformance.c
 *	  onnx-conformance: runs ONNX backend test folders through the engine.
 *
 * A test folder holds model.onnx and test_data_set_N folders of input_<i>.pb
 * and output_<i>.pb (serialized TensorProto).  Node mode (the default) walks ONNX's node tests
 * (test_* under /usr/include/onnx/backend/test/data/node), runs every test
 * whose graph uses only operators the engine registers, and compares each
 * output with numpy-style allclose (rtol 1e-3, atol 1e-5, as ONNX's backend
 * tests).  Tests using other operators are only counted.  Tests listed in a
 * known-failures file (name<TAB>reason; the name may be a shell pattern)
 * must fail with an engine error; a listed test that passes, crashes or
 * gives wrong values is a failure.
 *
 * --dir D --metric rel-l2 --tol T runs every D/<name>/ folder and requires
 * ||ours - ref||_2 / ||ref||_2 <= T per output (real models).
 *
 * Each test runs in a forked child, so a crash or a hang (--timeout) is
 * reported as that test's failure.  --device cuda:N runs the models on a
 * CUDA device (docs/gpu.md), in this process: CUDA cannot be used in a
 * child forked after it was initialised, and a context per test would cost
 * a second each; --tf32 on lets cuBLAS and cuDNN use TF32.  The last line is
 * "<name>: N passed, M failed[, K expected failures]"; the exit status is
 * non-zero when anything failed.  Single-threaded apart from the children.
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "onnx/onnx.pb-c.h"
#include "worker/engine/engine.h"
#include "worker/engine/model_int.h"
#include "worker/engine/op.h"

#define NODE_TEST_DIR "/usr/include/onnx/backend/test/data/node"
#define MSG_MAX 2048

typedef enum metric
{
	METRIC_ALLCLOSE,
	METRIC_REL_L2
} metric;

typedef struct options
{
	const char *dir;
	bool		node_mode;		/* no --dir: ONNX node tests */
	metric		metric;
	double		rtol;
	double		atol;
	double		tol;			/* rel-l2 bound */
	const char *known;			/* known-failures file, or NULL */
	const char *name;			/* summary line prefix */
	const char *filter;			/* substring a test name must contain */
	int			threads;
	int			timeout_s;
	int			device;			/* IE_DEVICE_CPU or a CUDA device */
	bool		tf32;
} options;

/* One known failure: test name and reason. */
typedef struct known_failure
{
	char	   *name;
	char	   *reason;
	bool		seen;
} known_failure;

static known_failure *known;
static int	n_known;

/* Result kinds a child reports through its pipe (first byte). */
#define RES_PASS 'P'			/* outputs match */
#define RES_ERROR 'E'			/* the engine refused with a message */
#define RES_WRONG 'W'			/* the engine ran but outputs do not match */
#define RES_HARNESS 'H'			/* the test folder itself is unreadable */

/* snprintf that truncates quietly (paths and messages are bounded). */
static void
fmt(char *buf, size_t len, const char *f,...)
	__attribute__((format(printf, 3, 4)));

static void
fmt(char *buf, size_t len, const char *f,...)
{
	va_list		ap;

	va_start(ap, f);
	vsnprintf(buf, len, f, ap);
	va_end(ap);
}

/* Reads a whole file; NULL (errno set) on failure. */
static void *
read_file(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	void	   *buf;
	long		n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
	{
		fclose(f);
		return NULL;
	}
	buf = malloc(n > 0 ? (size_t) n : 1);
	if (buf == NULL || fread(buf, 1, (size_t) n, f) != (size_t) n)
	{
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = (size_t) n;
	return buf;
}

/* Loads the known-failures file (name<TAB>reason, # comments); 0 or -1. */
static int
load_known(const char *path)
{
	FILE	   *f = fopen(path, "r");
	char		line[1024];

	if (f == NULL)
	{
		fprintf(stderr, "onnx-conformance: cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL)
	{
		char	   *tab,
				   *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		tab = strchr(line, '\t');
		if (tab == NULL)
		{
			fprintf(stderr, "onnx-conformance: %s: line without a tab: %s\n", path, line);
			fclose(f);
			return -1;
		}
		*tab = '\0';
		known = realloc(known, (n_known + 1) * sizeof(*known));
		known[n_known].name = strdup(line);
		known[n_known].reason = strdup(tab + 1);
		known[n_known].seen = false;
		n_known++;
	}
	fclose(f);
	return 0;
}

/*
 * The known failure called name, or NULL: an entry of that exact name, else
 * the first entry whose name is a shell pattern (fnmatch(3): *, ?, [...])
 * that name matches.
 */
static known_failure *
find_known(const char *name)
{
	for (int i = 0; i < n_known; i++)
		if (strcmp(known[i].name, name) == 0)
			return &known[i];
	for (int i = 0; i < n_known; i++)
		if (strpbrk(known[i].name, "*?[") != NULL &&
			fnmatch(known[i].name, name, 0) == 0)
			return &known[i];
	return NULL;
}

/* qsort comparator for an array of strings. */
static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Sorted names of the entries of dir starting with prefix (NULL: any). */
static char **
list_dir(const char *dir, const char *prefix, int *n)
{
	DIR		   *d = opendir(dir);
	struct dirent *e;
	char	  **names = NULL;

	*n = 0;
	if (d == NULL)
		return NULL;
	while ((e = readdir(d)) != NULL)
	{
		if (e->d_name[0] == '.')
			continue;
		if (prefix && strncmp(e->d_name, prefix, strlen(prefix)) != 0)
			continue;
		names = realloc(names, (*n + 1) * sizeof(char *));
		names[(*n)++] = strdup(e->d_name);
	}
	closedir(d);
	if (*n > 0)
		qsort(names, *n, sizeof(char *), cmp_str);
	return names;
}

/* Frees what list_dir returned. */
static void
free_names(char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/*
 * Whether every node of the model uses an operator the engine registers;
 * on false, *missing names the first one.  -1 when the file does not parse.
 */
static int
ops_supported(const char *model_path, char *missing, size_t len)
{
	size_t		n;
	void	   *buf = read_file(model_path, &n);
	Onnx__ModelProto *mp;
	int			rc = 1;

	if (buf == NULL)
		return -1;
	mp = onnx__model_proto__unpack(NULL, n, buf);
	free(buf);
	if (mp == NULL || mp->graph == NULL)
	{
		if (mp)
			onnx__model_proto__free_unpacked(mp, NULL);
		return -1;
	}
	for (size_t k = 0; k < mp->graph->n_node && rc == 1; k++)
	{
		const Onnx__NodeProto *np = mp->graph->node[k];
		bool		default_domain = np->domain == NULL || np->domain[0] == '\0' ||
			strcmp(np->domain, "ai.onnx") == 0;

		if (!default_domain || ie_op_lookup(np->op_type) == NULL)
		{
			snprintf(missing, len, "%s%s%s", default_domain ? "" : np->domain,
					 default_domain ? "" : ".", np->op_type);
			rc = 0;
		}
	}
	onnx__model_proto__free_unpacked(mp, NULL);
	return rc;
}

/* Reads a TensorProto file into a new tensor; 0, or -1 with a message. */
static int
read_tensor(const char *path, ie_tensor **out, char *msg, size_t len)
{
	size_t		n;
	void	   *buf = read_file(path, &n);
	Onnx__TensorProto *tp;
	char		err[512];
	int			rc;

	if (buf == NULL)
	{
		snprintf(msg, len, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	tp = onnx__tensor_proto__unpack(NULL, n, buf);
	free(buf);
	if (tp == NULL)
	{
		snprintf(msg, len, "%s is not a TensorProto", path);
		return -1;
	}
	rc = ie_tensor_from_proto(tp, out, err, sizeof(err));
	onnx__tensor_proto__free_unpacked(tp, NULL);
	if (rc != 0)
		snprintf(msg, len, "%s: %s", path, err);
	return rc;
}

/* Element i of a float-like tensor (float, double, float16) as double. */
static double
elem_f(const ie_tensor *t, int64_t i)
{
	if (t->dtype == IE_FLOAT)
		return ((const float *) t->data)[i];
	if (t->dtype == IE_DOUBLE)
		return ((const double *) t->data)[i];
	/* float16 */
	{
		uint16_t	h = ((const uint16_t *) t->data)[i];
		int			e = (h >> 10) & 0x1f,
					m = h & 0x3ff;
		double		v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) :
			ldexp(m | 0x400, e - 25);

		return (h & 0x8000) ? -v : v;
	}
}

/*
 * Compares output `name` (ours) with the reference; 0 when they match under
 * the metric, else -1 with the reason.  *score gets the rel-l2 error.
 */
static int
compare(const options *opt, const char *name, const ie_tensor *got,
		const ie_tensor *want, double *score, char *msg, size_t len)
{
	char		s1[128],
				s2[128];
	int64_t		n = ie_tensor_numel(want);
	bool		is_float = want->dtype == IE_FLOAT || want->dtype == IE_DOUBLE ||
		want->dtype == IE_FLOAT16;

	*score = 0;
	if (got->dtype != want->dtype)
	{
		snprintf(msg, len, "output '%s': type %s, expected %s", name,
				 ie_dtype_name(got->dtype), ie_dtype_name(want->dtype));
		return -1;
	}
	if (got->ndim != want->ndim ||
		memcmp(got->dims, want->dims, want->ndim * sizeof(int64_t)) != 0)
	{
		snprintf(msg, len, "output '%s': shape %s, expected %s", name,
				 ie_shape_str(s1, sizeof(s1), got->ndim, got->dims),
				 ie_shape_str(s2, sizeof(s2), want->ndim, want->dims));
		return -1;
	}
	if (!is_float)
	{
		size_t		es = ie_dtype_size(want->dtype);

		for (int64_t i = 0; i < n; i++)
			if (memcmp((const char *) got->data + i * es,
					   (const char *) want->data + i * es, es) != 0)
			{
				snprintf(msg, len, "output '%s': element %lld differs (exact %s compare)",
						 name, (long long) i, ie_dtype_name(want->dtype));
				return -1;
			}
		return 0;
	}
	if (opt->metric == METRIC_REL_L2)
	{
		double		num = 0,
					den = 0;

		for (int64_t i = 0; i < n; i++)
		{
			double		a = elem_f(got, i),
						b = elem_f(want, i);

			num += (a - b) * (a - b);
			den += b * b;
		}
		*score = den > 0 ? sqrt(num / den) : sqrt(num);
		if (!(*score <= opt->tol))
		{
			snprintf(msg, len, "output '%s': relative L2 error %.3g exceeds %.3g",
					 name, *score, opt->tol);
			return -1;
		}
		return 0;
	}
	{
		int64_t		bad = 0,
					first = -1;

		for (int64_t i = 0; i < n; i++)
		{
			double		a = elem_f(got, i),
						b = elem_f(want, i);
			bool		ok;

			if (isnan(b) || isnan(a))
				ok = isnan(a) && isnan(b);
			else if (isinf(b) || isinf(a))
				ok = a == b;
			else
				ok = fabs(a - b) <= opt->atol + opt->rtol * fabs(b);
			if (!ok)
			{
				if (first < 0)
					first = i;
				bad++;
			}
		}
		if (bad > 0)
		{
			snprintf(msg, len, "output '%s': %lld of %lld values differ; first at %lld: "
					 "got %.7g, expected %.7g", name, (long long) bad, (long long) n,
					 (long long) first, elem_f(got, first), elem_f(want, first));
			return -1;
		}
	}
	return 0;
}

/*
 * Runs one test folder in the current process: every test_data_set_*.
 * Returns a RES_* kind with its message in msg.
 */
static char
run_test(const options *opt, const char *tdir, char *msg, size_t len, double *worst)
{
	char		path[4096],
				err[MSG_MAX];
	ie_model   *m;
	char	  **sets;
	int			n_sets;
	char		res = RES_PASS;

	*worst = 0;
	fmt(path, sizeof(path), "%s/model.onnx", tdir);
	m = ie_model_load_file(path, err, sizeof(err));
	if (m == NULL)
	{
		fmt(msg, len, "load: %s", err);
		return RES_ERROR;
	}
	sets = list_dir(tdir, "test_data_set_", &n_sets);
	if (n_sets == 0)
	{
		fmt(msg, len, "no test_data_set_* folders");
		ie_model_destroy(&m);
		return RES_HARNESS;
	}
	for (int s = 0; s < n_sets && res == RES_PASS; s++)
	{
		int			n_in = ie_model_n_inputs(m),
					n_out = ie_model_n_outputs(m);
		ie_tensor **ins = calloc(n_in + 1, sizeof(*ins));
		ie_tensor **outs = calloc(n_out + 1, sizeof(*outs));
		ie_tensor  *ref = NULL;
		struct stat st;

		for (int i = 0; i < n_in && res == RES_PASS; i++)
		{
			fmt(path, sizeof(path), "%s/%s/input_%d.pb", tdir, sets[s], i);
			if (read_tensor(path, &ins[i], msg, len) != 0)
				res = RES_HARNESS;
		}
		fmt(path, sizeof(path), "%s/%s/input_%d.pb", tdir, sets[s], n_in);
		if (res == RES_PASS && stat(path, &st) == 0)
		{
			fmt(msg, len, "%s has more input files than the model has inputs (%d)",
					 sets[s], n_in);
			res = RES_HARNESS;
		}
		if (res == RES_PASS &&
			ie_model_run(m, (const ie_tensor *const *) ins, outs, err, sizeof(err)) != 0)
		{
			fmt(msg, len, "run (%s): %s", sets[s], err);
			res = RES_ERROR;
		}
		for (int j = 0; j < n_out && res == RES_PASS; j++)
		{
			double		score = 0;

			fmt(path, sizeof(path), "%s/%s/output_%d.pb", tdir, sets[s], j);
			if (stat(path, &st) != 0)
				continue;
			if (read_tensor(path, &ref, msg, len) != 0)
				res = RES_HARNESS;
			else if (compare(opt, ie_model_output_name(m, j), outs[j], ref, &score,
							 msg, len) != 0)
				res = RES_WRONG;
			if (score > *worst)
				*worst = score;
			ie_tensor_destroy(&ref);
		}
		for (int i = 0; i < n_in; i++)
			ie_tensor_destroy(&ins[i]);
		for (int j = 0; j < n_out; j++)
			ie_tensor_destroy(&outs[j]);
		free(ins);
		free(outs);
	}
	free_names(sets, n_sets);
	ie_model_destroy(&m);
	return res;
}

/*
 * Runs one test in a child process; returns its RES_* kind (or 'C' for a
 * crash or timeout) with the message in msg, and the elapsed ms.
 */
static char
run_isolated(const options *opt, const char *tdir, char *msg, size_t len,
			 double *score, double *ms)
{
	int			fds[2];
	pid_t		pid;
	int			status;
	char		buf[MSG_MAX + 64];
	size_t		got = 0;
	ssize_t		r;
	struct timespec t0,
				t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (pipe(fds) != 0)
	{
		snprintf(msg, len, "pipe: %s", strerror(errno));
		return RES_HARNESS;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0)
	{
		snprintf(msg, len, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return RES_HARNESS;
	}
	if (pid == 0)
	{
		char		cmsg[MSG_MAX];
		double		sc = 0;
		char		kind;
		int			n;

		close(fds[0]);
		alarm(opt->timeout_s);
		if (opt->threads > 0)
			ie_set_threads(opt->threads);
		cmsg[0] = '\0';
		kind = run_test(opt, tdir, cmsg, sizeof(cmsg), &sc);
		n = snprintf(buf, sizeof(buf), "%c%.17g\n%s", kind, sc, cmsg);
		if (write(fds[1], buf, n) != n)
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	while (got < sizeof(buf) - 1 && (r = read(fds[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t) r;
	buf[got] = '\0';
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (WIFSIGNALED(status))
	{
		snprintf(msg, len, "%s (signal %d)", WTERMSIG(status) == SIGALRM ?
				 "timed out" : "crashed", WTERMSIG(status));
		return 'C';
	}
	if (got < 2)
	{
		snprintf(msg, len, "child exited with status %d and no result",
				 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return 'C';
	}
	{
		char	   *nl = strchr(buf, '\n');

		*score = strtod(buf + 1, NULL);
		snprintf(msg, len, "%s", nl ? nl + 1 : "");
	}
	return buf[0];
}

/*
 * Runs one test in this process (a device run; see the banner): no
 * isolation from crashes or hangs.  Same results as run_isolated.
 */
static char
run_in_process(const options *opt, const char *tdir, char *msg, size_t len,
			   double *score, double *ms)
{
	struct timespec t0,
				t1;
	char		kind;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	msg[0] = '\0';
	kind = run_test(opt, tdir, msg, len, score);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	return kind;
}

/* Prints the usage and exits with status 2. */
static void
usage(void)
{
	fprintf(stderr,
			"usage: onnx-conformance [--dir D] [--metric allclose|rel-l2] [--tol T]\n"
			"       [--rtol R] [--atol A] [--known FILE] [--name NAME] [--filter S]\n"
			"       [--threads N] [--timeout SECONDS] [--device cpu|cuda:N]\n"
			"       [--tf32 on|off]\n");
	exit(2);
}

/* Parses the options, runs every test folder, prints the summary. */
int
main(int argc, char **argv)
{
	options		opt = {NODE_TEST_DIR, true, METRIC_ALLCLOSE, 1e-3, 1e-5, 1e-4,
		NULL, NULL, NULL, 0, 300, IE_DEVICE_CPU, false};
	char		derr[512];
	char	  **tests;
	int			n_tests;
	int			passed = 0,
				failed = 0,
				xfail = 0,
				skipped = 0;

	for (int i = 1; i < argc; i++)
	{
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (v == NULL)
			usage();
		if (strcmp(a, "--dir") == 0)
		{
			opt.dir = v;
			opt.node_mode = false;
		}
		else if (strcmp(a, "--node-dir") == 0)
			opt.dir = v;
		else if (strcmp(a, "--metric") == 0)
		{
			if (strcmp(v, "rel-l2") == 0)
				opt.metric = METRIC_REL_L2;
			else if (strcmp(v, "allclose") == 0)
				opt.metric = METRIC_ALLCLOSE;
			else
				usage();
		}
		else if (strcmp(a, "--tol") == 0)
			opt.tol = atof(v);
		else if (strcmp(a, "--rtol") == 0)
			opt.rtol = atof(v);
		else if (strcmp(a, "--atol") == 0)
			opt.atol = atof(v);
		else if (strcmp(a, "--known") == 0)
			opt.known = v;
		else if (strcmp(a, "--name") == 0)
			opt.name = v;
		else if (strcmp(a, "--filter") == 0)
			opt.filter = v;
		else if (strcmp(a, "--threads") == 0)
			opt.threads = atoi(v);
		else if (strcmp(a, "--timeout") == 0)
			opt.timeout_s = atoi(v);
		else if (strcmp(a, "--device") == 0)
		{
			if (ie_device_parse(v, &opt.device, derr, sizeof(derr)) != 0)
			{
				fprintf(stderr, "onnx-conformance: --device: %s\n", derr);
				usage();
			}
		}
		else if (strcmp(a, "--tf32") == 0 && (strcmp(v, "on") == 0 || strcmp(v, "off") == 0))
			opt.tf32 = strcmp(v, "on") == 0;
		else
			usage();
		i++;
	}
	if (opt.name == NULL)
		opt.name = opt.node_mode ? "onnx-conformance" : "onnx-models";
	if (opt.known != NULL && load_known(opt.known) != 0)
		return 2;
	if (opt.device != IE_DEVICE_CPU)
	{
		/* in this process: models load for the device from now on */
		if (opt.threads > 0)
			ie_set_threads(opt.threads);
		ie_set_tf32(opt.tf32);
		if (ie_set_device(opt.device, derr, sizeof(derr)) != 0)
		{
			fprintf(stderr, "%s: %s\n", opt.name, derr);
			printf("%s: 0 passed, 1 failed\n", opt.name);
			return 1;
		}
	}

	tests = list_dir(opt.dir, opt.node_mode ? "test_" : NULL, &n_tests);
	if (tests == NULL && n_tests == 0)
	{
		fprintf(stderr, "%s: no tests in %s\n", opt.name, opt.dir);
		printf("%s: 0 passed, 1 failed\n", opt.name);
		return 1;
	}
	for (int t = 0; t < n_tests; t++)
	{
		char		tdir[4096],
					mpath[4200],
					missing[256],
					msg[MSG_MAX];
		known_failure *kf;
		double		score = 0,
					ms = 0;
		int			sup;
		char		res;

		if (opt.filter && strstr(tests[t], opt.filter) == NULL)
			continue;
		fmt(tdir, sizeof(tdir), "%s/%s", opt.dir, tests[t]);
		fmt(mpath, sizeof(mpath), "%s/model.onnx", tdir);
		if (access(mpath, R_OK) != 0)
			continue;
		kf = find_known(tests[t]);
		if (kf)
			kf->seen = true;
		sup = ops_supported(mpath, missing, sizeof(missing));
		if (sup == 0 && opt.node_mode)
		{
			skipped++;
			continue;
		}
		if (sup == 0)
		{
			fmt(msg, sizeof(msg), "operator %s is not implemented", missing);
			res = RES_ERROR;
		}
		else if (sup < 0)
		{
			fmt(msg, sizeof(msg), "model.onnx does not parse");
			res = RES_HARNESS;
		}
		else if (opt.device == IE_DEVICE_CPU)
			res = run_isolated(&opt, tdir, msg, sizeof(msg), &score, &ms);
		else
			res = run_in_process(&opt, tdir, msg, sizeof(msg), &score, &ms);

		if (res == RES_PASS && kf == NULL)
		{
			passed++;
			if (opt.metric == METRIC_REL_L2)
				printf("PASS %s (rel-l2 %.3g, %.0f ms)\n", tests[t], score, ms);
			else
				printf("PASS %s\n", tests[t]);
		}
		else if (res == RES_PASS)
		{
			failed++;
			printf("FAIL %s: listed as a known failure (%s) but passes; remove it "
				   "from the list\n", tests[t], kf->reason);
		}
		else if (res == RES_ERROR && kf != NULL)
		{
			xfail++;
			printf("XFAIL %s: %s [known: %s]\n", tests[t], msg, kf->reason);
		}
		else
		{
			failed++;
			printf("FAIL %s: %s%s%s\n", tests[t],
				   res == RES_WRONG ? "wrong result: " : res == 'C' ? "" : "", msg,
				   kf ? " [listed as a known failure, but known failures must fail "
				   "with an engine error]" : "");
		}
		fflush(stdout);
	}
	for (int i = 0; i < n_known; i++)
		if (!known[i].seen && !opt.filter)
			printf("NOTE %s: listed in the known failures but not found\n", known[i].name);
	printf("%s: %d tests run, %d skipped (operators not implemented)\n", opt.name,
		   passed + failed + xfail, skipped);
	if (xfail > 0)
		printf("%s: %d passed, %d failed, %d expected failures\n", opt.name, passed,
			   failed, xfail);
	else
		printf("%s: %d passed, %d failed\n", opt.name, passed, failed);
	free_names(tests, n_tests);
	for (int i = 0; i < n_known; i++)
	{
		free(known[i].name);
		free(known[i].reason);
	}
	free(known);
	return failed > 0 ? 1 : 0;
}
