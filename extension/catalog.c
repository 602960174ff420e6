/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Reads registered models and workers from the extension's tables,
 *	  infer.model_registry and infer.worker_registry, through SPI.
 *
 * A model whose file was uploaded (infer.upload_model, upload.c) gets the
 * file's SHA-256 from infer.model_files in its ModelSpec.
 *
 * Every call opens and closes its own SPI connection and copies what it
 * returns into the memory context that was current when it was called, so
 * nothing it returns points into SPI memory.  The two queries are prepared
 * once per backend and kept (SPI_keepplan); the plan cache replans them
 * when the tables change, even when the extension is dropped and created
 * again.  InferCatalogPickWorker's round-robin position is per backend;
 * placement.c chooses among InferCatalogGetWorkers' list with the pool's
 * shared state.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_infer.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "curve.h"

/* Next index into the ordered worker list; wraps around. */
static uint32 worker_rr_next = 0;

/* The saved plans of model_query and worker_query. */
static SPIPlanPtr model_plan = NULL;
static SPIPlanPtr worker_plan = NULL;

/* Column numbers of the model query below (1-based, as SPI counts). */
enum
{
	MODEL_COL_NAME = 1,
	MODEL_COL_FILE,
	MODEL_COL_TASK,
	MODEL_COL_INPUT_HEIGHT,
	MODEL_COL_INPUT_WIDTH,
	MODEL_COL_MEAN,
	MODEL_COL_STD,
	MODEL_COL_COLOR_ORDER,
	MODEL_COL_RESIZE_MODE,
	MODEL_COL_LABELS,
	MODEL_COL_LABELS_FILE,
	MODEL_COL_VERSION,
	MODEL_COL_SHA256,			/* of the uploaded file (infer.model_files) */
	MODEL_COL_PRECISION
};

static const char *const model_query =
"SELECT m.name, m.file, m.task, m.input_height, m.input_width, m.mean, m.std, "
"       m.color_order, m.resize_mode, m.labels, m.labels_file, m.version, "
"       f.sha256, m.compute_precision "
"  FROM infer.model_registry m "
"  LEFT JOIN infer.model_files f ON f.file = m.file "
" WHERE m.name = $1";

static const char *const worker_query =
"SELECT name, endpoint, server_public_key FROM infer.worker_registry ORDER BY name";

/*
 * Returns the kept plan of query (preparing and keeping it on first use)
 * inside an SPI connection.
 */
static SPIPlanPtr
saved_plan(SPIPlanPtr *plan, const char *query, int nargs, Oid *argtypes)
{
	if (*plan == NULL)
	{
		SPIPlanPtr	p = SPI_prepare(query, nargs, argtypes);

		if (p == NULL)
			elog(ERROR, "SPI_prepare failed: %s",
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(p) != 0)
			elog(ERROR, "SPI_keepplan failed");
		*plan = p;
	}
	return *plan;
}

/*
 * Returns column col of the current SPI row as a C string copied into
 * cxt, or "" when it is NULL (proto3 strings have no NULL).
 */
static char *
spi_text(HeapTuple tuple, TupleDesc desc, int col, MemoryContext cxt)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tuple, desc, col, &isnull);

	if (isnull)
		return MemoryContextStrdup(cxt, "");
	return MemoryContextStrdup(cxt, TextDatumGetCString(d));
}

/*
 * Returns column col (an int4) of the current SPI row, 0 when NULL.
 */
static int32
spi_int4(HeapTuple tuple, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tuple, desc, col, &isnull);

	return isnull ? 0 : DatumGetInt32(d);
}

/*
 * Copies column col (a real[]) of the current SPI row into a float array
 * in cxt; *n gets its length (0 and NULL when the column is NULL).  NULL
 * elements are refused by infer.create_model, so meeting one is a bug.
 */
static float *
spi_float4_array(HeapTuple tuple, TupleDesc desc, int col, size_t *n,
				 MemoryContext cxt)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tuple, desc, col, &isnull);
	Datum	   *elems;
	bool	   *nulls;
	int			nelems;
	float	   *out;

	*n = 0;
	if (isnull)
		return NULL;
	deconstruct_array(DatumGetArrayTypeP(d), FLOAT4OID, sizeof(float4),
					  true, TYPALIGN_INT, &elems, &nulls, &nelems);
	out = MemoryContextAlloc(cxt, sizeof(float) * Max(nelems, 1));
	for (int i = 0; i < nelems; i++)
	{
		if (nulls[i])
			elog(ERROR, "NULL element in a model's mean or std");
		out[i] = DatumGetFloat4(elems[i]);
	}
	*n = nelems;
	return out;
}

/*
 * Copies column col (a text[]) of the current SPI row into a char * array
 * in cxt; *n gets its length (0 and NULL when the column is NULL).
 */
static char **
spi_text_array(HeapTuple tuple, TupleDesc desc, int col, size_t *n,
			   MemoryContext cxt)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tuple, desc, col, &isnull);
	Datum	   *elems;
	bool	   *nulls;
	int			nelems;
	char	  **out;

	*n = 0;
	if (isnull)
		return NULL;
	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &nulls, &nelems);
	out = MemoryContextAlloc(cxt, sizeof(char *) * Max(nelems, 1));
	for (int i = 0; i < nelems; i++)
		out[i] = MemoryContextStrdup(cxt, nulls[i] ? "" :
									 TextDatumGetCString(elems[i]));
	*n = nelems;
	return out;
}

/*
 * Builds the wire form of the model in the current SPI row, in cxt.
 */
static Pginfer__ModelSpec *
model_from_row(HeapTuple tuple, TupleDesc desc, MemoryContext cxt)
{
	Pginfer__ModelSpec *spec;

	spec = MemoryContextAllocZero(cxt, sizeof(Pginfer__ModelSpec));
	pginfer__model_spec__init(spec);
	spec->name = spi_text(tuple, desc, MODEL_COL_NAME, cxt);
	spec->file = spi_text(tuple, desc, MODEL_COL_FILE, cxt);
	spec->task = spi_text(tuple, desc, MODEL_COL_TASK, cxt);
	spec->input_height = spi_int4(tuple, desc, MODEL_COL_INPUT_HEIGHT);
	spec->input_width = spi_int4(tuple, desc, MODEL_COL_INPUT_WIDTH);
	spec->mean = spi_float4_array(tuple, desc, MODEL_COL_MEAN,
								  &spec->n_mean, cxt);
	spec->std = spi_float4_array(tuple, desc, MODEL_COL_STD,
								 &spec->n_std, cxt);
	spec->color_order = spi_text(tuple, desc, MODEL_COL_COLOR_ORDER, cxt);
	spec->resize_mode = spi_text(tuple, desc, MODEL_COL_RESIZE_MODE, cxt);
	spec->labels = spi_text_array(tuple, desc, MODEL_COL_LABELS,
								  &spec->n_labels, cxt);
	spec->labels_file = spi_text(tuple, desc, MODEL_COL_LABELS_FILE, cxt);
	spec->version = spi_text(tuple, desc, MODEL_COL_VERSION, cxt);
	spec->precision = spi_text(tuple, desc, MODEL_COL_PRECISION, cxt);
	/* an uploaded file's digest: the worker checks the bytes it loads */
	{
		bool		isnull;
		Datum		d = SPI_getbinval(tuple, desc, MODEL_COL_SHA256, &isnull);

		if (!isnull)
		{
			bytea	   *b = DatumGetByteaPP(d);

			spec->sha256.len = VARSIZE_ANY_EXHDR(b);
			spec->sha256.data = MemoryContextAlloc(cxt, Max(spec->sha256.len, 1));
			memcpy(spec->sha256.data, VARDATA_ANY(b), spec->sha256.len);
		}
	}
	return spec;
}

/*
 * Looks up nmodels registered models by name and returns their wire form,
 * allocated in the current memory context.  gucs[i], when not NULL, names
 * the setting that chose names[i] (it goes into the error's detail).
 * Unknown model: ERROR 42704 (undefined_object).
 */
Pginfer__ModelSpec **
InferCatalogGetModels(const char *const *names, const char *const *gucs,
					  int nmodels)
{
	MemoryContext cxt = CurrentMemoryContext;
	Pginfer__ModelSpec **specs;

	specs = palloc0(sizeof(Pginfer__ModelSpec *) * nmodels);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	for (int i = 0; i < nmodels; i++)
	{
		Oid			argtypes[1] = {TEXTOID};
		Datum		args[1];
		int			rc;

		args[0] = CStringGetTextDatum(names[i]);
		/* read-only: no command counter increment, so it also runs in a
		 * parallel query's leader and workers */
		rc = SPI_execute_plan(saved_plan(&model_plan, model_query, 1, argtypes),
							  args, NULL, true, 1);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute_plan failed: %s",
				 SPI_result_code_string(rc));
		if (SPI_processed == 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("model \"%s\" does not exist", names[i]),
					 gucs && gucs[i] ?
					 errdetail("Setting %s names it.", gucs[i]) : 0,
					 errhint("Register it with infer.create_model(), or see infer.models.")));
		specs[i] = model_from_row(SPI_tuptable->vals[0],
								  SPI_tuptable->tupdesc, cxt);
	}
	SPI_finish();
	return specs;
}

/*
 * Connects to SPI and runs worker_query (every registered worker, ordered
 * by name); the caller reads SPI_tuptable and calls SPI_finish.  The
 * registry is read in the latest snapshot, not the statement's: a worker
 * another session dropped (infer.drop_worker, committed) gets no further
 * request even from a statement that started before, and one it added is
 * used at once (docs/dba.md).  In parallel mode, where no new snapshot may
 * be taken, the statement's snapshot is read.  None registered: ERROR
 * 55000 (object_not_in_prerequisite_state), unless missing_ok.
 */
static void
select_workers(bool missing_ok)
{
	int			rc;
	SPIPlanPtr	plan;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	plan = saved_plan(&worker_plan, worker_query, 0, NULL);
	if (IsInParallelMode())
		rc = SPI_execute_plan(plan, NULL, NULL, true, 0);
	else
		rc = SPI_execute_snapshot(plan, NULL, NULL, GetLatestSnapshot(),
								  InvalidSnapshot, true, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_plan failed: %s", SPI_result_code_string(rc));
	if (SPI_processed == 0 && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no inference worker is registered"),
				 errhint("Add one with infer.add_worker(name, endpoint).")));
	/* each worker's CURVE key, for the socket client.c makes to it */
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		key = SPI_getbinval(SPI_tuptable->vals[i],
										SPI_tuptable->tupdesc, 3, &isnull);
		char	   *endpoint = SPI_getvalue(SPI_tuptable->vals[i],
											SPI_tuptable->tupdesc, 2);

		InferCurveNoteServerKey(endpoint, isnull ? NULL : TextDatumGetCString(key));
	}
}

/*
 * Picks the next worker in round-robin order over infer.worker_registry
 * (ordered by name), allocated in the current memory context.  None
 * registered: ERROR 55000 (object_not_in_prerequisite_state).
 */
InferWorker *
InferCatalogPickWorker(void)
{
	MemoryContext cxt = CurrentMemoryContext;
	InferWorker *worker;
	HeapTuple	tuple;
	TupleDesc	desc;

	select_workers(false);

	tuple = SPI_tuptable->vals[worker_rr_next++ % SPI_processed];
	desc = SPI_tuptable->tupdesc;
	worker = MemoryContextAllocZero(cxt, sizeof(InferWorker));
	worker->name = spi_text(tuple, desc, 1, cxt);
	worker->endpoint = spi_text(tuple, desc, 2, cxt);
	SPI_finish();
	return worker;
}

/*
 * Returns every registered worker (ordered by name) as an array in the
 * current memory context; *nworkers gets their number.  None registered:
 * ERROR 55000 (object_not_in_prerequisite_state), as InferCatalogPickWorker.
 */
InferWorker *
InferCatalogGetWorkers(int *nworkers)
{
	return InferCatalogListWorkers(nworkers, false);
}

/*
 * InferCatalogGetWorkers, or, with missing_ok, an empty array (*nworkers
 * 0) when none is registered.
 */
InferWorker *
InferCatalogListWorkers(int *nworkers, bool missing_ok)
{
	MemoryContext cxt = CurrentMemoryContext;
	InferWorker *workers;

	select_workers(missing_ok);
	workers = MemoryContextAllocZero(cxt, sizeof(InferWorker) *
									 Max(SPI_processed, 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		workers[i].name = spi_text(SPI_tuptable->vals[i],
								   SPI_tuptable->tupdesc, 1, cxt);
		workers[i].endpoint = spi_text(SPI_tuptable->vals[i],
									   SPI_tuptable->tupdesc, 2, cxt);
	}
	*nworkers = (int) SPI_processed;
	SPI_finish();
	return workers;
}
