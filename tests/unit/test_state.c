/*
 * test_state.c
 *	  Unit tests of the worker's placement state: worker/state.c (default
 *	  state endpoint, timings and their interpolation), worker/simulate.c
 *	  (profile parsing, compute time interpolation, placeholder rows) and
 *	  the model cache's residency (capacity, LRU eviction, pins, 53200)
 *	  through a loader that loads nothing.
 *
 * Threading: single-threaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/protocol.h"
#include "tests/unit/testutil.h"
#include "worker/model_cache.h"
#include "worker/simulate.h"
#include "worker/state.h"

static char tmpdir[64];

/* Writes text to tmpdir/name; returns the path (static buffer). */
static const char *
write_file(const char *name, const char *text)
{
	static char path[256];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	if (f != NULL)
	{
		fputs(text, f);
		fclose(f);
	}
	return path;
}

/* state_default_endpoint: same host, ephemeral port. */
static void
test_default_endpoint(void)
{
	char		buf[128];

	CHECK_EXPR(state_default_endpoint("tcp://127.0.0.1:5555", buf, sizeof(buf)) == 0);
	CHECK(strcmp(buf, "tcp://127.0.0.1:*") == 0, "got %s", buf);
	CHECK_EXPR(state_default_endpoint("tcp://10.0.0.5:*", buf, sizeof(buf)) == 0);
	CHECK(strcmp(buf, "tcp://10.0.0.5:*") == 0, "got %s", buf);
	CHECK_EXPR(state_default_endpoint("ipc:///tmp/w", buf, sizeof(buf)) == 0);
	CHECK(strcmp(buf, "ipc:///tmp/w.state") == 0, "got %s", buf);
	CHECK_EXPR(state_default_endpoint("tcp://127.0.0.1:5555", buf, 8) == -1);
}

/* state_timings: EWMA, interpolation, scaling, the list. */
static void
test_timings(void)
{
	state_timings *t = state_timings_new();
	Pginfer__ModelTiming **list = NULL;
	size_t		n = 0;

	CHECK_EXPR(t != NULL);
	if (t == NULL)
		return;
	CHECK_EXPR(state_timings_estimate(t, "a.onnx", 4) == -1);
	state_timings_record(t, "a.onnx", 1, 10);
	state_timings_record(t, "a.onnx", 8, 80);
	state_timings_record(t, "a.onnx", 8, 50);	/* 0.7 * 80 + 0.3 * 50 = 71 */
	CHECK(state_timings_estimate(t, "a.onnx", 8) > 70.99 &&
		  state_timings_estimate(t, "a.onnx", 8) < 71.01, "ewma %g",
		  state_timings_estimate(t, "a.onnx", 8));
	/* 10 + (71 - 10) * 3 / 7 = 36.14 */
	CHECK(state_timings_estimate(t, "a.onnx", 4) > 36.1 &&
		  state_timings_estimate(t, "a.onnx", 4) < 36.2, "interp %g",
		  state_timings_estimate(t, "a.onnx", 4));
	CHECK(state_timings_estimate(t, "a.onnx", 16) > 141.9 &&
		  state_timings_estimate(t, "a.onnx", 16) < 142.1, "scaled %g",
		  state_timings_estimate(t, "a.onnx", 16));
	CHECK_EXPR(state_timings_estimate(t, "b.onnx", 1) == -1);
	/* a run over 4 times the mean counts as 4 times it: 0.7 * 20 + 0.3 * 80 */
	state_timings_record(t, "c.onnx", 1, 20);
	state_timings_record(t, "c.onnx", 1, 5000);
	CHECK(state_timings_estimate(t, "c.onnx", 1) > 37.99 &&
		  state_timings_estimate(t, "c.onnx", 1) < 38.01, "clipped %g",
		  state_timings_estimate(t, "c.onnx", 1));
	/* within 4 times, as it is: 0.7 * 38 + 0.3 * 100 = 56.6 */
	state_timings_record(t, "c.onnx", 1, 100);
	CHECK(state_timings_estimate(t, "c.onnx", 1) > 56.59 &&
		  state_timings_estimate(t, "c.onnx", 1) < 56.61, "unclipped %g",
		  state_timings_estimate(t, "c.onnx", 1));
	CHECK_EXPR(state_timings_list(t, &list, &n) == 0 && n == 3);
	for (size_t i = 0; list != NULL && i < n; i++)
		if (list[i]->batch_size == 8)
			CHECK_EXPR(list[i]->runs == 2 && strcmp(list[i]->file, "a.onnx") == 0);
	state_timings_free_list(list);
	state_timings_destroy(&t);
	CHECK_EXPR(t == NULL);
}

/* The profile: parsing, errors, interpolation. */
static void
test_profile(void)
{
	char		err[512];
	sim_profile *p;
	const char *path;

	path = write_file("p.json",
					  "{\"load_bandwidth\": 1e9, \"extra\": [1, {\"x\": null}],\n"
					  " \"models\": {\"m.onnx\": {\"bytes\": 5000000,\n"
					  "   \"compute_ms\": [[8, 80], [1, 10], [32, 200]]}}}");
	p = sim_profile_load(path, err, sizeof(err));
	CHECK(p != NULL, "%s", err);
	if (p != NULL)
	{
		CHECK_EXPR(sim_profile_n_models(p) == 1);
		CHECK_EXPR(sim_profile_compute_ms(p, "m.onnx", 1) == 10);
		CHECK_EXPR(sim_profile_compute_ms(p, "m.onnx", 8) == 80);
		CHECK_EXPR(sim_profile_compute_ms(p, "m.onnx", 20) == 140);	/* 80 + 120 / 2 */
		CHECK_EXPR(sim_profile_compute_ms(p, "m.onnx", 64) == 400);
		CHECK_EXPR(sim_profile_compute_ms(p, "other.onnx", 1) == -1);
		sim_profile_destroy(&p);
	}
	path = write_file("bad.json", "{\"models\": {\"m.onnx\": {\"bytes\": 5, \"compute_ms\": [[0, 1]]}}}");
	CHECK_EXPR(sim_profile_load(path, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "rows >= 1") != NULL && strstr(err, "bad.json") != NULL, "%s", err);
	path = write_file("trunc.json", "{\"models\": {\"m.onnx\": ");
	CHECK_EXPR(sim_profile_load(path, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "offset") != NULL, "%s", err);
	CHECK_EXPR(sim_profile_load("/nonexistent/p.json", err, sizeof(err)) == NULL);
}

/* Sizes for the residency test's loader: "aN.onnx" is N MB. */
static int
fake_size(void *ctx, const char *file, uint64_t *bytes, char *err, size_t errlen)
{
	int			mb = 0;

	(void) ctx;
	if (sscanf(file, "a%d.onnx", &mb) != 1)
	{
		snprintf(err, errlen, "unknown %s", file);
		return -1;
	}
	*bytes = (uint64_t) mb << 20;
	return 0;
}

/* The residency test's load: counts loads. */
static int
fake_load(void *ctx, const char *file, char *err, size_t errlen)
{
	(void) file;
	(void) err;
	(void) errlen;
	(*(int *) ctx)++;
	return 0;
}

/* Acquires file; returns 0 or -1 (sqlstate in *sq, message in err). */
static int
acquire(model_cache *mc, const char *file, const char **sq, char *err, size_t errlen)
{
	Pginfer__ModelSpec spec = PGINFER__MODEL_SPEC__INIT;

	spec.file = (char *) file;
	return model_cache_acquire(mc, &spec, NULL, sq, err, errlen);
}

/* model_cache_can_load over the files f1 and f2 (NULL: just f1). */
static int
can_load(model_cache *mc, const char *f1, const char *f2)
{
	Pginfer__ModelSpec a = PGINFER__MODEL_SPEC__INIT;
	Pginfer__ModelSpec b = PGINFER__MODEL_SPEC__INIT;
	const Pginfer__ModelSpec *specs[2] = {&a, &b};

	a.file = (char *) f1;
	b.file = (char *) f2;
	return model_cache_can_load(mc, specs, f2 != NULL ? 2 : 1);
}

/* Whether file is resident, from the snapshot. */
static int
resident(model_cache *mc, const char *file)
{
	int			n,
				r = 0;
	model_info *m = model_cache_snapshot(mc, &n);

	for (int i = 0; i < n; i++)
		if (strcmp(m[i].file, file) == 0)
			r = m[i].resident;
	free(m);
	return r;
}

/* Capacity, LRU eviction, pins and 53200 with a loader. */
static void
test_residency(void)
{
	char		err[512];
	const char *sq = NULL;
	int			loads = 0;
	model_loader l = {fake_size, fake_load, &loads};
	model_cache *mc = model_cache_new(tmpdir, err, sizeof(err));

	CHECK_EXPR(mc != NULL);
	if (mc == NULL)
		return;
	model_cache_set_loader(mc, &l);
	model_cache_set_capacity(mc, (uint64_t) 10 << 20);
	CHECK_EXPR(acquire(mc, "a4.onnx", &sq, err, sizeof(err)) == 0);
	usleep(2000);
	CHECK_EXPR(acquire(mc, "a3.onnx", &sq, err, sizeof(err)) == 0);
	usleep(2000);
	CHECK_EXPR(acquire(mc, "a4.onnx", &sq, err, sizeof(err)) == 0);	/* a3 is now LRU */
	CHECK_EXPR(loads == 2 && model_cache_used(mc) == ((uint64_t) 7 << 20));
	/* 5 MB more: evicts a3 (least recently used), keeps a4 */
	CHECK_EXPR(acquire(mc, "a5.onnx", &sq, err, sizeof(err)) == 0);
	CHECK_EXPR(resident(mc, "a4.onnx") && !resident(mc, "a3.onnx") && resident(mc, "a5.onnx"));
	CHECK_EXPR(model_cache_count(mc) == 2);
	/* pinned a4 and a5: a6 cannot fit */
	model_cache_pin(mc, "a4.onnx", +1);
	model_cache_pin(mc, "./a5.onnx", +1);
	CHECK_EXPR(acquire(mc, "a6.onnx", &sq, err, sizeof(err)) == -1);
	CHECK(sq != NULL && strcmp(sq, PGINFER_SQLSTATE_OUT_OF_MEMORY) == 0 &&
		  strstr(err, "\"a6.onnx\" needs 6291456 bytes") != NULL &&
		  strstr(err, "\"a4.onnx\" (4194304 bytes)") != NULL, "%s", err);
	CHECK_EXPR(model_cache_evict(mc, "a4.onnx") == -1);
	/* ... so a group needing a6 waits (0); resident or free room: 1 */
	CHECK_EXPR(can_load(mc, "a6.onnx", NULL) == 0);
	CHECK_EXPR(can_load(mc, "a4.onnx", "./a5.onnx") == 1);
	CHECK_EXPR(can_load(mc, "a1.onnx", "a1.onnx") == 1);	/* 1 MB is free */
	CHECK_EXPR(can_load(mc, "a4.onnx", "a6.onnx") == 0);	/* a5 holds 5 MB */
	/* never fits: alone, or together */
	CHECK_EXPR(can_load(mc, "a11.onnx", NULL) == -1);
	CHECK_EXPR(can_load(mc, "a5.onnx", "a6.onnx") == -1);
	CHECK_EXPR(loads == 3);		/* it only looks */
	/* unpin a5: a6 evicts it */
	model_cache_pin(mc, "a5.onnx", -1);
	CHECK_EXPR(can_load(mc, "a6.onnx", NULL) == 1);
	/* reserving room for a6 evicts a5 now, and loads nothing */
	{
		Pginfer__ModelSpec a6 = PGINFER__MODEL_SPEC__INIT;
		const Pginfer__ModelSpec *specs[1] = {&a6};
		uint64_t	ev = model_cache_get_counts(mc).evictions;

		a6.file = (char *) "a6.onnx";
		CHECK_EXPR(model_cache_reserve(mc, specs, 1) == 1);
		CHECK_EXPR(!resident(mc, "a5.onnx") && !resident(mc, "a6.onnx") && loads == 3);
		CHECK_EXPR(model_cache_used(mc) == ((uint64_t) 4 << 20) &&
				   model_cache_get_counts(mc).evictions == ev + 1);
	}
	CHECK_EXPR(acquire(mc, "a6.onnx", &sq, err, sizeof(err)) == 0);
	CHECK_EXPR(resident(mc, "a4.onnx") && !resident(mc, "a5.onnx") && resident(mc, "a6.onnx"));
	/* larger than the cap */
	CHECK_EXPR(acquire(mc, "a11.onnx", &sq, err, sizeof(err)) == -1);
	CHECK(strstr(err, "more than the 10485760 bytes") != NULL, "%s", err);
	/* unknown to the loader: 58P01 */
	CHECK_EXPR(acquire(mc, "zz.onnx", &sq, err, sizeof(err)) == -1);
	CHECK_EXPR(strcmp(sq, PGINFER_SQLSTATE_NO_MODEL) == 0);
	model_cache_pin(mc, "a4.onnx", -1);
	CHECK_EXPR(model_cache_evict(mc, "a4.onnx") == 1);
	CHECK_EXPR(model_cache_evict(mc, "a4.onnx") == 0);
	CHECK_EXPR(model_cache_used(mc) == ((uint64_t) 6 << 20));
	model_cache_destroy(&mc);
}

/* sim_run: placeholder rows, one block per fragment, samples. */
static void
test_sim_run(void)
{
	char		err[512];
	const char *sq = NULL;
	const char *path = write_file("r.json",
								  "{\"output_values\": 3, \"models\": {"
								  "\"e.onnx\": {\"bytes\": 10, \"compute_ms\": [[1, 1]]},"
								  "\"c.onnx\": {\"bytes\": 10, \"compute_ms\": [[1, 1]]}}}");
	sim_profile *p = sim_profile_load(path, err, sizeof(err));
	model_cache *mc = model_cache_new(tmpdir, err, sizeof(err));
	Pginfer__ModelSpec es = PGINFER__MODEL_SPEC__INIT,
				cs = PGINFER__MODEL_SPEC__INIT;
	Pginfer__ModelSpec *ep[1] = {&es},
			   *cp[1] = {&cs};
	Pginfer__Fragment fe = PGINFER__FRAGMENT__INIT,
				fc = PGINFER__FRAGMENT__INIT;
	Pginfer__Fragment *more[1] = {&fc};
	Pginfer__RunFragment run = PGINFER__RUN_FRAGMENT__INIT;
	uint64_t	ids[2] = {5, 6};
	const void *rows[2] = {"x", "y"};
	size_t		lens[2] = {1, 1};
	state_sample samples[8];
	int			ns = 0;
	fragment_result *r = NULL;

	CHECK_EXPR(p != NULL && mc != NULL);
	if (p == NULL || mc == NULL)
		goto done;
	sim_attach(p, mc);
	es.file = "e.onnx";
	cs.file = "c.onnx";
	cs.name = "cls";
	fe.kind = PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT;
	fe.n_models = 1;
	fe.models = ep;
	fc.kind = PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY;
	fc.n_models = 1;
	fc.models = cp;
	run.fragment = &fe;
	run.n_more_fragments = 1;
	run.more_fragments = more;
	run.n_row_ids = 2;
	run.row_ids = ids;
	CHECK(sim_run(p, mc, &run, NULL, rows, lens, 2, 64, NULL, samples, 8, &ns, &r,
				  &sq, err, sizeof(err)) == 0, "%s", err);
	CHECK_EXPR(r != NULL && r->n_fragments == 2 && ns == 2);
	if (r != NULL && r->n_fragments == 2)
	{
		CHECK_EXPR(r->rows[0].row_id == 5 && r->rows[0].ok && r->rows[0].n_values == 3 &&
				   r->n_values[0] == 3 && r->values[0] != NULL && r->values[0][2] == 0);
		CHECK_EXPR(r->rows[3].row_id == 6 && r->rows[3].fragment == 1);
		/* SHA-256("y") begins a1fce4363854ff88 */
		CHECK(strcmp(r->rows[3].text, "sim:cls:a1fce4363854ff88") == 0, "%s", r->rows[3].text);
	}
	CHECK_EXPR(model_cache_count(mc) == 2);
	fragment_result_destroy(&r);

done:
	model_cache_destroy(&mc);
	sim_profile_destroy(&p);
}

/* Runs every test; prints the summary line. */
int
main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_state.XXXXXX");
	if (mkdtemp(tmpdir) == NULL)
	{
		perror("mkdtemp");
		return 1;
	}
	test_default_endpoint();
	test_timings();
	test_profile();
	test_residency();
	test_sim_run();
	{
		char		cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
	return tu_report("test_state");
}
