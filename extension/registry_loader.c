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
 * reads infer.worker_registry (InferCatalogListWorkers, as a session's
 * placement does), puts each worker in the pool (InferPoolRegister) and
 * exits.  When no background worker slot is free (max_worker_processes),
 * the monitor logs it once and tries again after 1 s, then every 5 s; a
 * loader that fails (a lock held on the registry past its lock_timeout)
 * is logged, and that database's workers are then taken in at its first
 * session.
 *
 * The loader runs as the bootstrap superuser in a database whose owner
 * may have set its search_path (ALTER DATABASE ... SET): it runs no SQL of
 * its own but the registry's fixed query (qualified names, no operator),
 * under search_path = pg_catalog, pg_temp, so that nothing the database's
 * owner created is called with its privileges.
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
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

/* How long a loader waits for a lock on a registry (lock_timeout). */
#define LOADER_LOCK_TIMEOUT "1s"
/* The waits before starting a loader again when no slot was free. */
#define LOADER_RETRY_FIRST_MS 1000
#define LOADER_RETRY_MS 5000

/* The databases left to load (in TopMemoryContext) and the running loader. */
static Oid *loader_dbs = NULL;
static int	loader_ndbs = 0;
static int	loader_next = 0;
static BackgroundWorkerHandle *loader_handle = NULL;
static TimestampTz loader_retry_at = 0; /* no slot was free: try then */
static bool loader_logged = false;	/* that was logged */

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

/* Whether database dbid still exists (it may have been dropped since the list). */
static bool
loader_database_exists(Oid dbid)
{
	bool		exists;

	StartTransactionCommand();
	exists = SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(dbid));
	CommitTransactionCommand();
	return exists;
}

/*
 * Starts the loader of database dbid; false when no background worker
 * slot is free (logged the first time).
 */
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
		if (!loader_logged)
			ereport(LOG,
					(errmsg("pg_infer pool monitor: could not start a registry loader: no background worker slot is free (%d of %d databases left)",
							loader_ndbs - loader_next, loader_ndbs),
					 errdetail("The monitor tries again after %d s, then every %d s; meanwhile a database's workers are watched from its first session on.",
							   LOADER_RETRY_FIRST_MS / 1000, LOADER_RETRY_MS / 1000),
					 errhint("Raise max_worker_processes.")));
		loader_logged = true;
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
	TimestampTz now = GetCurrentTimestamp();

	if (loader_dbs == NULL)
		loader_list_databases();
	if (loader_handle != NULL)
	{
		if (GetBackgroundWorkerPid(loader_handle, &pid) != BGWH_STOPPED)
			return false;
		pfree(loader_handle);
		loader_handle = NULL;
	}
	if (loader_retry_at != 0 && now < loader_retry_at)
		return false;
	while (loader_next < loader_ndbs)
	{
		Oid			dbid = loader_dbs[loader_next];

		/* dropped since the list: nothing to connect to */
		if (!loader_database_exists(dbid))
		{
			loader_next++;
			continue;
		}
		if (!loader_start(dbid))
		{
			loader_retry_at = TimestampTzPlusMilliseconds(now, loader_retry_at == 0 ?
														  LOADER_RETRY_FIRST_MS :
														  LOADER_RETRY_MS);
			return false;
		}
		loader_next++;
		return false;
	}
	return true;
}

/*
 * Entry point of a registry loader (bgw_function_name): in the database
 * whose OID is arg, where pg_infer is installed, puts each worker of
 * infer.worker_registry in the pool (InferPoolRegister), then exits.
 * Connects as the bootstrap superuser; writes nothing; see the banner for
 * its search_path and lock_timeout.  Errors: a lock on the registry held
 * past LOADER_LOCK_TIMEOUT (55P03), logged as the loader exits.
 */
void
InferRegistryLoaderMain(Datum arg)
{
	int			n = 0;
	InferWorker *workers;

	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(arg), InvalidOid, 0);
	pgstat_report_appname("pg_infer registry loader");
	/* over what the database's settings say (ALTER DATABASE ... SET) */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("lock_timeout", LOADER_LOCK_TIMEOUT, PGC_SUSET, PGC_S_OVERRIDE);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (OidIsValid(get_extension_oid("pg_infer", true)))
	{
		workers = InferCatalogListWorkers(&n, true);
		for (int i = 0; i < n; i++)
			(void) InferPoolRegister(workers[i].name, workers[i].endpoint);
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	proc_exit(0);
}
