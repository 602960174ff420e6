/*-------------------------------------------------------------------------
 *
 * registry_loader.c
 *	  At the pool monitor's start, reads every database's worker registry
 *	  into the pool, so that the monitor watches the workers before any
 *	  session has used them.
 *
 * The pool's slots are filled by backends as they read a registry
 * (InferPoolRegister: at infer.add_worker, at each placement, when
 * infer.workers is read); the registries are tables, one per database that
 * has the extension, and the monitor is connected to no database.  After a
 * server start (or a crash restart) the pool was empty until a session came:
 * infer.workers said unknown at its first read, and a worker that was down
 * was never logged so.  So the monitor, as it starts, lists the databases
 * that take connections (pg_database, a shared catalog) and runs a *registry
 * loader* in each, one after the other: a short-lived dynamic background
 * worker connected to that database that, where pg_infer is installed,
 * reads infer.workers as a session would (which registers every worker of
 * the registry in the pool) and exits.  A loader that cannot be started
 * (no free background worker slot: max_worker_processes) or fails is
 * logged; the pool then fills as sessions come, as before.
 *
 * Runs on a hot standby too (read-only: it writes nothing).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_infer.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

/* The databases left to load (in TopMemoryContext) and the running loader. */
static Oid *loader_dbs = NULL;
static int	loader_ndbs = 0;
static int	loader_next = 0;
static BackgroundWorkerHandle *loader_handle = NULL;

/*
 * Lists the databases a loader may connect to (datallowconn, not a
 * template, not left invalid by an interrupted DROP DATABASE) into
 * loader_dbs.  Reads the shared catalog pg_database in a transaction of
 * its own.
 */
static void
loader_list_databases(void)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	int			room = 16;

	loader_dbs = MemoryContextAlloc(TopMemoryContext, sizeof(Oid) * room);
	loader_ndbs = 0;
	loader_next = 0;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);

		if (!db->datallowconn || db->datistemplate ||
			database_is_invalid_form(db))
			continue;
		if (loader_ndbs == room)
		{
			room *= 2;
			loader_dbs = repalloc(loader_dbs, sizeof(Oid) * room);
		}
		loader_dbs[loader_ndbs++] = db->oid;
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
}

/* Starts the loader of database dbid; false when it cannot be (logged). */
static bool
loader_start(Oid dbid)
{
	BackgroundWorker bgw;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_ConsistentState;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;
	strlcpy(bgw.bgw_library_name, "pg_infer", BGW_MAXLEN);
	strlcpy(bgw.bgw_function_name, "InferRegistryLoaderMain", BGW_MAXLEN);
	snprintf(bgw.bgw_name, BGW_MAXLEN, "pg_infer registry loader (database %u)",
			 dbid);
	strlcpy(bgw.bgw_type, "pg_infer registry loader", BGW_MAXLEN);
	bgw.bgw_main_arg = ObjectIdGetDatum(dbid);
	bgw.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&bgw, &loader_handle))
	{
		loader_handle = NULL;
		ereport(LOG,
				(errmsg("pg_infer pool monitor: could not start the registry loader of database %u",
						dbid),
				 errdetail("No background worker slot is free."),
				 errhint("Its workers are watched once a session uses them; raise max_worker_processes to have them watched from the start.")));
		return false;
	}
	return true;
}

/*
 * The pool monitor's step of the registry loading, called on every turn of
 * its loop (its latch is set when a loader starts or stops): lists the
 * databases at the first call, then runs their loaders one at a time.
 * Returns whether loading is over.  Errors: those of reading pg_database.
 */
bool
InferRegistryLoadStep(void)
{
	pid_t		pid;

	if (loader_dbs == NULL)
		loader_list_databases();
	if (loader_handle != NULL)
	{
		if (GetBackgroundWorkerPid(loader_handle, &pid) != BGWH_STOPPED)
			return false;
		pfree(loader_handle);
		loader_handle = NULL;
	}
	while (loader_next < loader_ndbs)
		if (loader_start(loader_dbs[loader_next++]))
			return false;
	return true;
}

/*
 * Entry point of a registry loader (bgw_function_name): in the database
 * whose OID is arg, reads infer.workers when pg_infer is installed there
 * (InferPoolRegister puts each worker of the registry in the pool), then
 * exits.  Connects as the bootstrap superuser; writes nothing.
 */
void
InferRegistryLoaderMain(Datum arg)
{
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(arg), InvalidOid, 0);
	pgstat_report_appname("pg_infer registry loader");

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_infer registry loader: SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	if (SPI_execute("SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'pg_infer'",
					true, 1) != SPI_OK_SELECT)
		elog(ERROR, "pg_infer registry loader: could not read pg_extension");
	if (SPI_processed > 0 &&
		SPI_execute("SELECT count(status) FROM infer.workers", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "pg_infer registry loader: could not read infer.workers");
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	proc_exit(0);
}
