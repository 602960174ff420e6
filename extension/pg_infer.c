/*-------------------------------------------------------------------------
 *
 * pg_infer.c
 *	  Entry point of the pg_infer extension: _PG_init calls one XxxInit()
 *	  per subsystem, in the order they depend on each other.
 *
 * _PG_init may run in the postmaster (shared_preload_libraries) or in a
 * backend at the first call of an infer.* function.  No subsystem may
 * start ZeroMQ here: the client creates its context lazily, per backend,
 * after fork (see client.c).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_infer.h"

#include "access/xact.h"
#include "fmgr.h"
#include "storage/proc.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/*
 * Module load: the settings, the pool's shared memory and monitor (only
 * from shared_preload_libraries), the ZeroMQ client's load-time checks,
 * the InferBatch custom scan and the planner hook that places it.  The
 * catalog and the SQL functions keep no state that needs setting up.
 */
void
_PG_init(void)
{
	InferGucInit();
	InferPoolInit();
	InferClientInit();
	InferBatchInit();
	InferPlannerInit();

	MarkGUCPrefixReserved("infer");
}

/*
 * Whether this is the first time in the current statement that the
 * caller, which owns *once, asks: the statement is known by its
 * transaction's local id and its start time.  For messages raised once
 * per statement rather than once per row or worker.
 */
bool
InferFirstInStatement(InferOncePerStatement *once)
{
	TimestampTz stmt = GetCurrentStatementStartTimestamp();

	if (once->lxid == MyProc->lxid && once->stmt_start == stmt)
		return false;
	once->lxid = MyProc->lxid;
	once->stmt_start = stmt;
	return true;
}
