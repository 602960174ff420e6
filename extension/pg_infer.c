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
#include "catalog/objectaccess.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/*
 * Module load: the settings, the pool's shared memory and monitor and
 * the counters of infer.stats and infer.progress (only from
 * shared_preload_libraries), the ZeroMQ client's load-time checks,
 * the InferBatch custom scan and the planner hook that places it.  The
 * catalog and the SQL functions keep no state that needs setting up.
 */
void
_PG_init(void)
{
	InferGucInit();
	InferPoolInit();
	InferStatsInit();
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

/*
 * Raises "permission denied for function" (SQLSTATE 42501) unless the
 * current user may execute funcid, and calls the function-execute hook,
 * as the executor does when it starts a function call (ExecInitFunc).
 * For plans that run ML calls without starting their FuncExpr (InferBatch
 * evaluates only the arguments): without it, batching would skip the
 * EXECUTE privilege.  Checked at executor start, so that a cached plan
 * run after SET ROLE is checked against the new role.
 */
void
InferCheckExecute(Oid funcid)
{
	AclResult	aclresult = pg_proc_aclcheck(funcid, GetUserId(), ACL_EXECUTE);

	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FUNCTION, get_func_name(funcid));
	InvokeFunctionExecuteHook(funcid);
}
