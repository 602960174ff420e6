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

#include "fmgr.h"
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
