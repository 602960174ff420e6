/*-------------------------------------------------------------------------
 *
 * planner.c
 *	  The planner hook that batches pg_infer's ML calls: it finds calls to
 *	  infer.ocr, infer.detect_text, infer.predict, infer.classify (of an
 *	  image or a text) and infer.embed in a finished plan and puts an InferBatch custom scan (inferbatch.c) above
 *	  the scan or join node that evaluates them.
 *
 * The rewrite works on the plan after set_plan_references, node by node,
 * bottom-up, over the main plan and every subplan (SubPlans, CTEs).  For a
 * scan, join or projecting Result node P whose target list or quals hold
 * ML calls:
 *
 *	- P's quals are split at the first one that holds an ML call: the ones
 *	  before stay in P (cheap quals first, as the planner ordered them by
 *	  cost), the rest move up to the InferBatch node C;
 *	- the calls that would run for every row reaching C ("unconditional":
 *	  in the first moved qual, or in the target list when no qual moved;
 *	  not under CASE, COALESCE, AND, OR, ...) and whose model argument is
 *	  a constant or a query parameter become C's batched calls;
 *	- P's target list becomes the Vars that C needs (P passes them up as
 *	  plain columns); C's scan tuple (custom_scan_tlist) is those columns
 *	  followed by one column per batched call; C's target list and quals
 *	  are P's, with Vars and batched calls replaced by INDEX_VAR references
 *	  to that scan tuple, so the parent sees the same columns as before.
 *	  Calls left unbatched stay in C's expressions and run per row.
 *	- with a LIMIT right above and no qual in C, C gets the LIMIT's count
 *	  and offset, so it never reads more rows from P than the LIMIT needs.
 *	- when C has quals, the calls of its target list (which run only for
 *	  the rows that pass) are batched by a second InferBatch node above C
 *	  (batch_after_filter);
 *	- a nested call infer.embed('minilm', infer.ocr(img)) (infer.embed
 *	  with a fixed model over infer.ocr or infer.classify, see
 *	  call_is_chain) is ONE batched call: the worker runs it as one
 *	  fragment with a following stage, so the image goes out once and the
 *	  vector comes back, the text staying on the worker.  When the inner
 *	  call is also needed on its own (SELECT infer.ocr(img),
 *	  infer.embed('minilm', infer.ocr(img))), both are batched calls of C
 *	  with the same input, sent in one request (see inferbatch.c), and the
 *	  worker runs the OCR once for both.  Other nested calls are batched
 *	  in two steps: the inner call by C, the outer one, whose argument is
 *	  then a column of C, by a node above C; and so on while calls are
 *	  left.
 *	- a projecting Result over pass-through nodes (Limit, Sort,
 *	  Incremental Sort, Material, Unique: no quals, target lists that are
 *	  their child's columns) over an InferBatch node C, which PostgreSQL
 *	  makes when it postpones a volatile or expensive target list above an
 *	  ORDER BY and LIMIT (make_sort_input_target) while the same call is in
 *	  the WHERE clause: a call of the Result that, followed down the
 *	  chain, is equal() to one of C's batched calls takes C's result
 *	  column instead, appended to C's target list and to each
 *	  pass-through node's (at the end, so the sort and unique keys keep
 *	  their column numbers); only rows that passed C reach the chain, so
 *	  it is the value the call would compute (reuse_batched_calls).
 *	  Calls that match none, or a chain of another shape, are batched as
 *	  above by a node over the Result.
 *
 * C keeps P as its lefttree (so that EXPLAIN resolves OUTER_VAR through
 * it); custom_private holds Integers only and the calls live in
 * custom_exprs, so the plan survives copyObject and nodeToString.
 * Statements other than SELECT and INSERT, those with data-modifying
 * CTEs, and those with row marks (FOR UPDATE), all of which may run
 * EvalPlanQual rechecks that the custom scan cannot serve, are left
 * alone.
 *
 * Parallel query: the ML functions are PARALLEL SAFE, so PostgreSQL puts
 * them in the partial plan under a Gather or Gather Merge, which every
 * parallel worker (and the leader, when it participates) runs over its
 * own share of the rows.  The rewrite treats nodes there like any other,
 * parallel-aware scans and joins included (C only reads what P returns,
 * so how P shares its relation between processes does not matter), and C
 * is parallel safe when P was.  A C under a Gather is marked parallel
 * aware: not to divide rows (P does that) but to get the dynamic shared
 * memory in which each parallel worker leaves its EXPLAIN ANALYZE
 * counters for the leader (inferbatch.c).  Each process batches its own
 * rows with its own ZeroMQ sockets (client.c).
 *
 * JIT: PostgreSQL decides whether to JIT-compile a plan's expressions from
 * its total cost, and an ML function's COST (10000 per call) makes nearly
 * every query with ML calls over a few dozen rows pass jit_above_cost,
 * although JIT cannot speed the calls up: it only adds its compile time
 * (tens to hundreds of ms per statement) and LLVM's memory to the
 * backend.  After the rewrite, the decision is made again from the cost
 * without the calls that InferBatch nodes of the main plan tree make
 * (their COST times cpu_operator_cost times the rows reaching the node);
 * calls left per row, and those in subplans, still count.
 *
 * The ML functions are recognised by OID, looked up once per backend and
 * looked up again only when pg_proc changes (a syscache callback), and
 * only when they belong to extension pg_infer.
 *
 *-------------------------------------------------------------------------
 */
#include "extension/pg_infer.h"

#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/executor.h"
#include "jit/jit.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/planner.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

static planner_hook_type prev_planner_hook = NULL;

/* OIDs of the ML functions, indexed by InferFunction; see the banner. */
static bool ml_valid = false;
static Oid	ml_oids[INFER_FN_LAST + 1];

/* State of one statement's rewrite. */
typedef struct RewriteState
{
	int			next_node_id;	/* plan_node_id for the next new node */
	int			gather_depth;	/* Gather (Merge) nodes above this node */
	double		batched_cost;	/* planner cost of the calls batched */
} RewriteState;

/* What collect_calls looks for and finds. */
typedef struct CollectContext
{
	List	   *calls;			/* batchable FuncExprs, distinct (equal()) */
	bool		conditional;	/* below a node that may skip its children */
} CollectContext;

/* What the mutators replace. */
typedef struct MapContext
{
	List	   *vars;			/* child columns, in order */
	List	   *calls;			/* batched calls, in order (NULL: none) */
	Index		varno;			/* INDEX_VAR or OUTER_VAR */
} MapContext;

static int	list_index_of(List *list, Node *node);
static int	call_index_of(List *calls, Node *call);
static int	list_index_of_ptr(List *list, Node *node);
static bool model_arg_is_fixed(FuncExpr *call);
static Plan *rewrite_plan(RewriteState *rs, Plan *plan, Limit *limit);
static Plan *batch_node(RewriteState *rs, Plan *plan, Limit *limit);

/* syscache callback: pg_proc changed, look the OIDs up again */
static void
ml_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	ml_valid = false;
}

/*
 * Looks up the ML functions' OIDs (InvalidOid for those that do not exist
 * or do not belong to extension pg_infer).  Needs a transaction.  Reads
 * the catalog directly, with no privilege check: every statement of every
 * role is planned through here, and a role that may not use schema infer
 * still plans its other queries (calling an ML function stays refused at
 * execution, 42501).
 */
static void
ml_lookup(void)
{
	static const struct
	{
		InferFunction fn;
		const char *name;
		int			nargs;
		Oid			args[2];
	}			sigs[] = {
		{INFER_FN_OCR, "ocr", 1, {BYTEAOID}},
		{INFER_FN_DETECT_TEXT, "detect_text", 1, {BYTEAOID}},
		{INFER_FN_PREDICT, "predict", 2, {TEXTOID, BYTEAOID}},
		{INFER_FN_CLASSIFY, "classify", 2, {TEXTOID, BYTEAOID}},
		{INFER_FN_EMBED, "embed", 2, {TEXTOID, TEXTOID}},
		{INFER_FN_CLASSIFY_TEXT, "classify", 2, {TEXTOID, TEXTOID}},
	};
	Oid			ext;
	Oid			nsp;

	/* an invalidation during the look-up makes the next call look again */
	ml_valid = true;
	memset(ml_oids, 0, sizeof(ml_oids));
	ext = get_extension_oid("pg_infer", true);
	nsp = get_namespace_oid("infer", true);
	if (!OidIsValid(ext) || !OidIsValid(nsp))
		return;
	for (size_t i = 0; i < lengthof(sigs); i++)
	{
		oidvector  *args = buildoidvector(sigs[i].args, sigs[i].nargs);
		Oid			f = GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid,
										CStringGetDatum(sigs[i].name),
										PointerGetDatum(args),
										ObjectIdGetDatum(nsp));

		if (OidIsValid(f) && getExtensionOfObject(ProcedureRelationId, f) == ext)
			ml_oids[sigs[i].fn] = f;
		pfree(args);
	}
}

/*
 * expression_tree_walker callback of InferArgIsStatementValue: true at
 * anything whose value may change from row to row (a column, a
 * parameter other than a query's, which is how the executor sees an
 * outer column or a subquery's value, a subquery, an aggregate).
 */
static bool
varies_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var) || IsA(node, PlaceHolderVar) || IsA(node, SubLink) ||
		IsA(node, SubPlan) || IsA(node, AlternativeSubPlan) ||
		IsA(node, Aggref) || IsA(node, WindowFunc) || IsA(node, GroupingFunc))
		return true;
	if (IsA(node, Param))
		return ((Param *) node)->paramkind != PARAM_EXTERN;
	return expression_tree_walker(node, varies_walker, context);
}

/*
 * Whether node is a value given once for the whole statement: an
 * expression of constants and query parameters ($1) with no volatile
 * function.  Constants and parameters must go together: a custom plan of
 * a prepared statement has its parameters, and what it can fold over
 * them ($1::varchar, $1 || ''), as constants (the planner puts them in:
 * clauses.c, eval_const_expressions), a generic plan keeps them as
 * parameters, and a call must mean the same under both.
 */
bool
InferArgIsStatementValue(const Node *node)
{
	return node != NULL && !varies_walker((Node *) node, NULL) &&
		!contain_volatile_functions((Node *) node);
}

/*
 * Returns which ML function funcid is, INFER_FN_NONE for any other
 * function.  Needs a transaction.
 */
InferFunction
InferPlannerFunction(Oid funcid)
{
	if (!ml_valid)
		ml_lookup();
	for (int fn = INFER_FN_OCR; fn <= INFER_FN_LAST; fn++)
		if (OidIsValid(ml_oids[fn]) && ml_oids[fn] == funcid)
			return (InferFunction) fn;
	return INFER_FN_NONE;
}

/* Whether node is a call of an ML function. */
static bool
is_ml_call(Node *node)
{
	return node != NULL && IsA(node, FuncExpr) &&
		InferPlannerFunction(((FuncExpr *) node)->funcid) != INFER_FN_NONE;
}

/* expression_tree_walker callback: is there an ML call in the tree? */
static bool
contains_ml_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (is_ml_call(node))
		return true;
	return expression_tree_walker(node, contains_ml_walker, context);
}

static bool
contains_ml(Node *node)
{
	return contains_ml_walker(node, NULL);
}

/*
 * Whether the ML call can be batched: its model argument (predict,
 * classify, embed) is a constant or a query parameter, so one fragment
 * serves every row, and its image (or text) argument holds no ML call and
 * no subplan.  infer.classify(text, text) over a constant or a parameter
 * is left per row: for an image classifier that value is an image in
 * bytea's input form (see infer_classify_text).
 */
static bool
call_is_batchable(FuncExpr *call)
{
	InferFunction fn = InferPlannerFunction(call->funcid);
	Node	   *img;

	if (fn == INFER_FN_PREDICT || fn == INFER_FN_CLASSIFY || fn == INFER_FN_EMBED ||
		fn == INFER_FN_CLASSIFY_TEXT)
	{
		if (list_length(call->args) != 2 || !model_arg_is_fixed(call))
			return false;
		img = lsecond(call->args);
		if (fn == INFER_FN_CLASSIFY_TEXT && InferArgIsStatementValue(img))
			return false;
	}
	else
	{
		if (list_length(call->args) != 1)
			return false;
		img = linitial(call->args);
	}
	return !contains_ml(img) && !contain_subplans(img);
}

/*
 * Whether an ML call's model argument (predict, classify, embed) is a
 * constant or a query parameter, so that one fragment serves every row.
 */
static bool
model_arg_is_fixed(FuncExpr *call)
{
	Node	   *model = linitial(call->args);

	return IsA(model, Const) ||
		(IsA(model, Param) && ((Param *) model)->paramkind == PARAM_EXTERN);
}

/*
 * Whether call is a chain the worker runs as one fragment with a
 * following stage: infer.embed with a fixed model over a text-valued ML
 * call (infer.ocr, infer.classify) that is itself batchable or a chain,
 * in a database whose encoding is UTF-8 or SQL_ASCII, where the text
 * reaches infer.embed with the same bytes as through the backend
 * (elsewhere a per-row call converts it twice and may fail).
 */
static bool
call_is_chain(FuncExpr *call)
{
	InferFunction fn = InferPlannerFunction(call->funcid);
	FuncExpr   *inner;
	InferFunction ifn;

	if (fn != INFER_FN_EMBED || list_length(call->args) != 2 ||
		!model_arg_is_fixed(call))
		return false;
	if (!IsA(lsecond(call->args), FuncExpr))
		return false;
	inner = (FuncExpr *) lsecond(call->args);
	ifn = InferPlannerFunction(inner->funcid);
	if (ifn != INFER_FN_OCR && ifn != INFER_FN_CLASSIFY)
		return false;
	if (inner->funcresulttype != TEXTOID)
		return false;
	if (GetDatabaseEncoding() != PG_UTF8 &&
		GetDatabaseEncoding() != PG_SQL_ASCII)
		return false;
	return call_is_batchable(inner) || call_is_chain(inner);
}

/*
 * Whether the executor evaluates every child of node whenever it
 * evaluates node.  Nodes not listed (CASE, COALESCE, AND, OR, row
 * comparisons, subscripts, subplans, ...) may skip some.
 */
static bool
evaluates_all_children(Node *node)
{
	switch (nodeTag(node))
	{
		case T_List:
		case T_TargetEntry:
		case T_FuncExpr:
		case T_OpExpr:
		case T_DistinctExpr:
		case T_NullIfExpr:
		case T_ScalarArrayOpExpr:
		case T_RelabelType:
		case T_CoerceViaIO:
		case T_ConvertRowtypeExpr:
		case T_CollateExpr:
		case T_NullTest:
		case T_BooleanTest:
		case T_CoerceToDomain:
		case T_ArrayExpr:
		case T_RowExpr:
		case T_FieldSelect:
		case T_MinMaxExpr:
			return true;
		case T_BoolExpr:
			return ((BoolExpr *) node)->boolop == NOT_EXPR;
		default:
			return false;
	}
}

/*
 * expression_tree_walker callback: adds to context->calls the batchable
 * ML calls that run whenever the tree is evaluated.
 */
static bool
collect_calls_walker(Node *node, CollectContext *context)
{
	bool		saved;
	bool		result;

	if (node == NULL)
		return false;
	if (is_ml_call(node))
	{
		if (!call_is_batchable((FuncExpr *) node) &&
			!call_is_chain((FuncExpr *) node))
		{
			/*
			 * Its arguments run whenever it runs: an ML call among them (a
			 * nested call) is batched here, and the outer call by the next
			 * node up (see rewrite_plan).
			 */
			return expression_tree_walker(node, collect_calls_walker,
										  (void *) context);
		}
		if (!context->conditional && call_index_of(context->calls, node) < 0)
			context->calls = lappend(context->calls, node);
		return false;
	}
	saved = context->conditional;
	if (IsA(node, SubscriptingRef))
	{
		SubscriptingRef *sbs = (SubscriptingRef *) node;

		/* the container always runs first; a NULL skips the subscripts */
		if (collect_calls_walker((Node *) sbs->refexpr, context))
			return true;
		context->conditional = true;
		result = collect_calls_walker((Node *) sbs->refupperindexpr, context) ||
			collect_calls_walker((Node *) sbs->reflowerindexpr, context) ||
			collect_calls_walker((Node *) sbs->refassgnexpr, context);
		context->conditional = saved;
		return result;
	}
	if (IsA(node, ArrayCoerceExpr))
	{
		ArrayCoerceExpr *ac = (ArrayCoerceExpr *) node;

		/*
		 * A cast of an array (infer.predict(...)::numeric(3,2)[]): the
		 * array always runs first; the per-element expression only for a
		 * non-NULL, non-empty array.
		 */
		if (collect_calls_walker((Node *) ac->arg, context))
			return true;
		context->conditional = true;
		result = collect_calls_walker((Node *) ac->elemexpr, context);
		context->conditional = saved;
		return result;
	}
	if (!evaluates_all_children(node))
		context->conditional = true;
	result = expression_tree_walker(node, collect_calls_walker, context);
	context->conditional = saved;
	return result;
}

/* expression_tree_walker callback: adds every distinct Var to *vars. */
static bool
collect_vars_walker(Node *node, List **vars)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		if (!list_member(*vars, node))
			*vars = lappend(*vars, node);
		return false;
	}
	return expression_tree_walker(node, collect_vars_walker, vars);
}

/*
 * expression_tree_mutator callback: replaces each batched call by a Var of
 * its column in C's scan tuple, and each Var by a Var of its child column
 * (attribute numbers from 1, varno context->varno).
 */
static Node *
map_mutator(Node *node, MapContext *context)
{
	int			pos;

	if (node == NULL)
		return NULL;
	if (context->calls != NIL && is_ml_call(node) &&
		(pos = call_index_of(context->calls, node)) >= 0)
	{
		FuncExpr   *call = (FuncExpr *) node;

		return (Node *) makeVar(INDEX_VAR,
								list_length(context->vars) + pos + 1,
								call->funcresulttype, -1, call->funccollid, 0);
	}
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		pos = list_index_of(context->vars, node);
		if (pos < 0)
			elog(ERROR, "pg_infer: Var %d/%d missing from the InferBatch child",
				 var->varno, var->varattno);
		return (Node *) makeVar(context->varno, pos + 1, var->vartype,
								var->vartypmod, var->varcollid, 0);
	}
	return expression_tree_mutator(node, map_mutator, context);
}

/* list_member_ptr-like index of the first element equal() to node, or -1 */
static int
list_index_of(List *list, Node *node)
{
	ListCell   *lc;

	foreach(lc, list)
		if (equal(lfirst(lc), node))
			return foreach_current_index(lc);
	return -1;
}

/* check_functions_in_node callback: whether func_id is volatile */
static bool
volatile_checker(Oid func_id, void *context)
{
	return func_volatile(func_id) == PROVOLATILE_VOLATILE;
}

/*
 * expression_tree_walker callback: whether node holds a volatile function
 * other than the ML functions (which are VOLATILE as they ask a worker),
 * or a sequence's next value, as contain_volatile_functions counts them.
 */
static bool
volatile_arg_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, NextValueExpr))
		return true;
	if (!is_ml_call(node) &&
		check_functions_in_node(node, volatile_checker, context))
		return true;
	return expression_tree_walker(node, volatile_arg_walker, context);
}

/*
 * Whether node holds a volatile function other than the ML functions
 * (random(), nextval(), a function left VOLATILE): two occurrences of
 * such an expression are two evaluations in PostgreSQL, which InferBatch
 * must not merge into one (calls, shared input).
 */
bool
InferExprIsVolatile(const Node *node)
{
	return volatile_arg_walker((Node *) node, NULL);
}

/*
 * Index in calls of the batched call that serves call, or -1.  Calls are
 * one when equal(), unless their arguments are volatile
 * (InferExprIsVolatile): then only the same node serves it.
 */
static int
call_index_of(List *calls, Node *call)
{
	if (InferExprIsVolatile((Node *) ((FuncExpr *) call)->args))
		return list_index_of_ptr(calls, call);
	return list_index_of(calls, call);
}

/* Index of node itself (the same pointer) in list, or -1. */
static int
list_index_of_ptr(List *list, Node *node)
{
	ListCell   *lc;

	foreach(lc, list)
		if (lfirst(lc) == node)
			return foreach_current_index(lc);
	return -1;
}

/*
 * The planner's cost of one evaluation of an ML call: the function's
 * COST (pg_proc.procost) in units of cpu_operator_cost, as
 * add_function_cost counts it; its arguments are not counted.
 */
static double
call_cost(FuncExpr *call)
{
	HeapTuple	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(call->funcid));
	double		cost = 0.0;

	if (HeapTupleIsValid(tuple))
	{
		cost = ((Form_pg_proc) GETSTRUCT(tuple))->procost * cpu_operator_cost;
		ReleaseSysCache(tuple);
	}
	return cost;
}

/* call_cost of a batched call and of the stages chained under it. */
static double
chain_cost(FuncExpr *call)
{
	double		cost = call_cost(call);

	if (list_length(call->args) == 2 && is_ml_call(lsecond(call->args)))
		cost += chain_cost((FuncExpr *) lsecond(call->args));
	return cost;
}

/*
 * Makes standard_planner's JIT decision for stmt again, from its total
 * cost less ml_cost (the batched calls' cost, see the banner).  Only ever
 * turns JIT off or down, never on.
 */
static void
redo_jit_decision(PlannedStmt *stmt, double ml_cost)
{
	double		cost = stmt->planTree->total_cost - ml_cost;
	int			flags = PGJIT_NONE;

	if (!(stmt->jitFlags & PGJIT_PERFORM) || ml_cost <= 0.0)
		return;
	if (jit_above_cost >= 0 && cost > jit_above_cost)
	{
		flags |= PGJIT_PERFORM;
		if (jit_optimize_above_cost >= 0 && cost > jit_optimize_above_cost)
			flags |= PGJIT_OPT3;
		if (jit_inline_above_cost >= 0 && cost > jit_inline_above_cost)
			flags |= PGJIT_INLINE;
		if (jit_expressions)
			flags |= PGJIT_EXPR;
		if (jit_tuple_deforming)
			flags |= PGJIT_DEFORM;
	}
	stmt->jitFlags &= flags;
}

#if defined(USE_ASSERT_CHECKING) || defined(PG_INFER_CHECK_PLANS)
/*
 * Returns nodeToString(node) without its ":location N" fields, which
 * stringToNode reads back as -1.
 */
static char *
node_text(const void *node)
{
	char	   *text = nodeToString(node);
	char	   *out = palloc(strlen(text) + 1);
	char	   *o = out;

	for (const char *p = text; *p;)
	{
		if (strncmp(p, " :location ", 11) == 0)
		{
			p += 11;
			if (*p == '-')
				p++;
			while (*p >= '0' && *p <= '9')
				p++;
			continue;
		}
		*o++ = *p++;
	}
	*o = '\0';
	pfree(text);
	return out;
}
#endif

/*
 * In assert-enabled builds (or with -DPG_INFER_CHECK_PLANS), checks that
 * the node survives copyObject and nodeToString/stringToNode, as Citus
 * does for its plans: all three print the same.  (equal() does not
 * compare plan nodes.)
 */
static void
check_round_trip(CustomScan *cscan)
{
#if defined(USE_ASSERT_CHECKING) || defined(PG_INFER_CHECK_PLANS)
	char	   *text = node_text(cscan);
	char	   *copied = node_text(copyObject(cscan));
	char	   *reread = node_text(stringToNode(nodeToString(cscan)));

	if (strcmp(text, copied) != 0 || strcmp(text, reread) != 0)
		elog(ERROR, "pg_infer: InferBatch plan does not survive copyObject or nodeToString/stringToNode");
	elog(DEBUG1, "pg_infer: InferBatch plan round trip ok");
	pfree(text);
	pfree(copied);
	pfree(reread);
#endif
}

/*
 * Builds the InferBatch node for plan (a scan, join or projecting Result
 * node), changing plan into C's child; returns plan itself when nothing
 * in it can be batched.  limit: the Limit node right above, or NULL.
 */
static Plan *
batch_node(RewriteState *rs, Plan *plan, Limit *limit)
{
	List	   *keep = NIL;
	List	   *moved = NIL;
	CollectContext cc = {NIL, false};
	MapContext	mc;
	List	   *vars = NIL;
	List	   *child_tlist = NIL;
	List	   *scan_tlist = NIL;
	List	   *exprs = NIL;
	CustomScan *cscan;
	ListCell   *lc;
	int			attno;

	if (!contains_ml((Node *) plan->targetlist) &&
		!contains_ml((Node *) plan->qual))
		return plan;

	/* quals before the first one with an ML call stay in the child */
	foreach(lc, plan->qual)
	{
		if (moved == NIL && !contains_ml(lfirst(lc)))
			keep = lappend(keep, lfirst(lc));
		else
			moved = lappend(moved, lfirst(lc));
	}

	/*
	 * The first moved qual runs for every row that reaches C; the other
	 * quals and the target list only for rows that passed it.
	 */
	if (moved != NIL)
		(void) collect_calls_walker(linitial(moved), &cc);
	else
		(void) collect_calls_walker((Node *) plan->targetlist, &cc);
	if (cc.calls == NIL)
		return plan;

	(void) collect_vars_walker((Node *) plan->targetlist, &vars);
	(void) collect_vars_walker((Node *) moved, &vars);

	/* the child passes the Vars up as plain columns */
	attno = 0;
	foreach(lc, vars)
	{
		attno++;
		child_tlist = lappend(child_tlist,
							  makeTargetEntry(copyObject(lfirst(lc)), attno,
											  NULL, false));
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) makeVar(OUTER_VAR, attno,
															  exprType(lfirst(lc)),
															  exprTypmod(lfirst(lc)),
															  exprCollation(lfirst(lc)),
															  0),
											 attno, NULL, false));
	}

	/* the calls, with their arguments over the child's columns */
	mc.vars = vars;
	mc.calls = NIL;
	mc.varno = OUTER_VAR;
	foreach(lc, cc.calls)
	{
		Node	   *call = map_mutator(lfirst(lc), &mc);

		attno++;
		exprs = lappend(exprs, call);
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) copyObject(call), attno,
											 NULL, false));
	}
	if (limit != NULL && moved == NIL &&
		limit->limitOption == LIMIT_OPTION_COUNT && limit->limitCount != NULL)
	{
		exprs = lappend(exprs, copyObject(limit->limitCount));
		exprs = lappend(exprs, copyObject(limit->limitOffset));
	}
	else
	{
		exprs = lappend(exprs, NULL);
		exprs = lappend(exprs, NULL);
	}

	foreach(lc, cc.calls)
		rs->batched_cost += chain_cost(lfirst(lc)) * plan->plan_rows;

	cscan = makeNode(CustomScan);
	mc.calls = cc.calls;
	mc.varno = INDEX_VAR;
	cscan->scan.plan.targetlist = (List *) map_mutator((Node *) plan->targetlist,
													   &mc);
	cscan->scan.plan.qual = (List *) map_mutator((Node *) moved, &mc);
	cscan->scan.plan.startup_cost = plan->startup_cost;
	cscan->scan.plan.total_cost = plan->total_cost;
	cscan->scan.plan.plan_rows = plan->plan_rows;
	cscan->scan.plan.plan_width = plan->plan_width;
	/* parallel aware for the shared counters only: see the banner */
	cscan->scan.plan.parallel_aware = rs->gather_depth > 0;
	cscan->scan.plan.parallel_safe = plan->parallel_safe;
	cscan->scan.plan.async_capable = false;
	cscan->scan.plan.plan_node_id = rs->next_node_id++;
	cscan->scan.plan.initPlan = plan->initPlan;
	cscan->scan.plan.extParam = bms_copy(plan->extParam);
	cscan->scan.plan.allParam = bms_copy(plan->allParam);
	cscan->scan.plan.lefttree = plan;
	cscan->scan.scanrelid = 0;
	cscan->flags = 0;
	cscan->custom_plans = NIL;
	cscan->custom_exprs = exprs;
	cscan->custom_private = list_make2(makeInteger(list_length(vars)),
									   makeInteger(list_length(cc.calls)));
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_relids = NULL;
	cscan->methods = InferBatchMethods();

	plan->targetlist = child_tlist;
	plan->qual = keep;
	plan->initPlan = NIL;
	check_round_trip(cscan);
	return (Plan *) cscan;
}

/*
 * For an InferBatch node c1 with quals: batches the ML calls of its
 * target list, which run only for the rows that pass the quals, in a
 * second InferBatch node above it.  c1 then returns the columns that
 * target list needs; the new node computes the target list.  Returns the
 * new node, or c1 when its target list has nothing to batch.
 */
static Plan *
batch_after_filter(RewriteState *rs, CustomScan *c1, Limit *limit)
{
	CollectContext cc = {NIL, false};
	List	   *vars = NIL;
	MapContext	mc;
	Result	   *proj;
	Plan	   *c2;
	List	   *c1_tlist = NIL;
	List	   *old_tlist = c1->scan.plan.targetlist;
	ListCell   *lc;

	(void) collect_calls_walker((Node *) old_tlist, &cc);
	if (cc.calls == NIL)
		return (Plan *) c1;

	/*
	 * A projecting Result over c1 computes c1's target list over the
	 * columns c1 then returns (its INDEX_VAR Vars, passed up in order);
	 * batch_node splits that Result, and c1 takes the Result's place.
	 */
	(void) collect_vars_walker((Node *) old_tlist, &vars);
	mc.vars = vars;
	mc.calls = NIL;
	mc.varno = OUTER_VAR;
	proj = makeNode(Result);
	proj->plan.targetlist = (List *) map_mutator((Node *) old_tlist, &mc);
	proj->plan.startup_cost = c1->scan.plan.startup_cost;
	proj->plan.total_cost = c1->scan.plan.total_cost;
	proj->plan.plan_rows = c1->scan.plan.plan_rows;
	proj->plan.plan_width = c1->scan.plan.plan_width;
	proj->plan.parallel_safe = c1->scan.plan.parallel_safe;
	proj->plan.plan_node_id = rs->next_node_id++;
	proj->plan.extParam = bms_copy(c1->scan.plan.extParam);
	proj->plan.allParam = bms_copy(c1->scan.plan.allParam);
	proj->plan.lefttree = (Plan *) c1;

	c2 = batch_node(rs, (Plan *) proj, limit);
	if (c2 == (Plan *) proj)
	{
		/* cannot happen (cc found a call), but leave c1 as it was */
		return (Plan *) c1;
	}

	/* proj now returns plain OUTER_VAR Vars of c1's output: fold it */
	foreach(lc, proj->plan.targetlist)
	{
		TargetEntry *tle = lfirst(lc);
		Var		   *var = (Var *) tle->expr;

		Assert(IsA(var, Var) && var->varno == OUTER_VAR);
		c1_tlist = lappend(c1_tlist,
						   makeTargetEntry(copyObject(list_nth(vars, var->varattno - 1)),
										   tle->resno, NULL, false));
	}
	c1->scan.plan.targetlist = c1_tlist;
	c2->lefttree = (Plan *) c1;
	return c2;
}

/* Whether plan is a node batch_node knows how to split. */
static bool
can_batch(Plan *plan)
{
	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_SampleScan:
		case T_IndexScan:
		case T_IndexOnlyScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
		case T_SubqueryScan:
		case T_FunctionScan:
		case T_ValuesScan:
		case T_CteScan:
		case T_NamedTuplestoreScan:
		case T_NestLoop:
		case T_MergeJoin:
		case T_HashJoin:
			return true;
		case T_Result:
			return plan->lefttree != NULL;
		default:
			return false;
	}
}

/*
 * For an inner join, a join filter (JOIN ... ON) is the same condition as
 * a filter on the joined rows: the join filters that hold ML calls move
 * after the plain filters, so that batch_node batches them like a WHERE
 * clause.  Outer, semi and anti joins keep theirs (there the join filter
 * decides which rows are NULL-extended or kept), and those calls run one
 * row at a time.
 */
static void
move_ml_join_filters(Join *join)
{
	List	   *keep = NIL;
	List	   *moved = NIL;
	ListCell   *lc;

	if (join->jointype != JOIN_INNER)
		return;
	foreach(lc, join->joinqual)
	{
		if (contains_ml(lfirst(lc)))
			moved = lappend(moved, lfirst(lc));
		else
			keep = lappend(keep, lfirst(lc));
	}
	if (moved == NIL)
		return;
	join->joinqual = keep;
	join->plan.qual = list_concat(join->plan.qual, moved);
}

/*
 * Whether plan is a pass-through node that reuse_batched_calls looks
 * through: one that returns its child's rows unchanged (Limit, Sort,
 * Incremental Sort, Material, Unique), with no quals and a target list
 * that is its child's, column for column (Var n of OUTER_VAR at resno n,
 * as set_plan_references makes it), so that a column appended to both
 * keeps the same number in each and the sort or unique keys do not move.
 */
static bool
is_pass_through(Plan *plan)
{
	ListCell   *lc;

	switch (nodeTag(plan))
	{
		case T_Limit:
		case T_Sort:
		case T_IncrementalSort:
		case T_Material:
		case T_Unique:
			break;
		default:
			return false;
	}
	if (plan->lefttree == NULL || plan->righttree != NULL || plan->qual != NIL ||
		list_length(plan->targetlist) != list_length(plan->lefttree->targetlist))
		return false;
	foreach(lc, plan->targetlist)
	{
		TargetEntry *tle = lfirst(lc);
		Var		   *var = (Var *) tle->expr;

		if (!IsA(var, Var) || var->varno != OUTER_VAR ||
			var->varattno != tle->resno || var->varlevelsup != 0)
			return false;
	}
	return true;
}

/* What reuse_mutator works with: see reuse_batched_calls. */
typedef struct ReuseContext
{
	List	   *chain;			/* the pass-through nodes, bottom up */
	CustomScan *cscan;			/* the InferBatch node under them */
	int			nvars;			/* child columns in cscan's scan tuple */
	List	   *calls;			/* cscan's batched calls (OUTER_VAR form) */
} ReuseContext;

/* What translate_mutator works with. */
typedef struct TranslateContext
{
	ReuseContext *rc;
	bool		failed;			/* set: the expression is not over C's child */
} TranslateContext;

/*
 * expression_tree_mutator callback: returns a copy of an expression over
 * the chain's top (OUTER_VAR Vars) written as C's batched calls are, over
 * C's child columns; sets context->failed when a Var does not come down
 * the chain as a plain child column of C, or at a subplan or a Param
 * other than a query's.
 */
static Node *
translate_mutator(Node *node, TranslateContext *context)
{
	if (node == NULL || context->failed)
		return NULL;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;
		int			attno = var->varattno;
		CustomScan *cscan = context->rc->cscan;
		TargetEntry *tle;

		/* identity target lists: the column's number is the same down to C */
		if (var->varno != OUTER_VAR || var->varlevelsup != 0 || attno < 1 ||
			attno > list_length(cscan->scan.plan.targetlist))
		{
			context->failed = true;
			return NULL;
		}
		tle = list_nth(cscan->scan.plan.targetlist, attno - 1);
		var = (Var *) tle->expr;
		if (!IsA(var, Var) || var->varno != INDEX_VAR ||
			var->varattno < 1 || var->varattno > context->rc->nvars)
		{
			context->failed = true;
			return NULL;
		}
		tle = list_nth(cscan->custom_scan_tlist, var->varattno - 1);
		return copyObject((Node *) tle->expr);
	}
	/* C's batched calls hold no subplan and no Param but $1 */
	if ((IsA(node, Param) && ((Param *) node)->paramkind != PARAM_EXTERN) ||
		IsA(node, SubPlan) || IsA(node, AlternativeSubPlan))
	{
		context->failed = true;
		return NULL;
	}
	return expression_tree_mutator(node, translate_mutator, context);
}

/*
 * Returns the number of the column, in the chain's top node, that holds
 * the value of C's batched call number pos (from 0), appending it to C's
 * target list and to each pass-through node's when none does yet.
 */
static AttrNumber
reuse_column(ReuseContext *rc, int pos)
{
	Plan	   *cplan = &rc->cscan->scan.plan;
	Node	   *call = list_nth(rc->calls, pos);
	AttrNumber	attno = rc->nvars + pos + 1;
	AttrNumber	resno;
	ListCell   *lc;

	/*
	 * A column of C that already holds it (the same call in P's target
	 * list) comes up through the chain at the same number.
	 */
	foreach(lc, cplan->targetlist)
	{
		Var		   *var = (Var *) ((TargetEntry *) lfirst(lc))->expr;

		if (IsA(var, Var) && var->varno == INDEX_VAR && var->varattno == attno)
			return ((TargetEntry *) lfirst(lc))->resno;
	}

	resno = list_length(cplan->targetlist) + 1;
	cplan->targetlist = lappend(cplan->targetlist,
								makeTargetEntry((Expr *) makeVar(INDEX_VAR, attno,
																 exprType(call),
																 exprTypmod(call),
																 exprCollation(call), 0),
												resno, NULL, false));
	foreach(lc, rc->chain)
	{
		Plan	   *node = lfirst(lc);

		Assert(list_length(node->targetlist) == resno - 1);
		node->targetlist = lappend(node->targetlist,
								   makeTargetEntry((Expr *) makeVar(OUTER_VAR, resno,
																	exprType(call),
																	exprTypmod(call),
																	exprCollation(call), 0),
												   resno, NULL, false));
	}
	return resno;
}

/*
 * expression_tree_mutator callback: replaces each ML call that, written
 * over C's child columns, is one of C's batched calls by a Var of the
 * column that brings C's result up the chain (reuse_column).
 */
static Node *
reuse_mutator(Node *node, ReuseContext *rc)
{
	if (node == NULL)
		return NULL;
	if (is_ml_call(node) &&
		!InferExprIsVolatile((Node *) ((FuncExpr *) node)->args))
	{
		TranslateContext tc = {rc, false};
		Node	   *below = translate_mutator(node, &tc);
		int			pos;

		if (!tc.failed && (pos = list_index_of(rc->calls, below)) >= 0)
			return (Node *) makeVar(OUTER_VAR, reuse_column(rc, pos),
									exprType(node), exprTypmod(node),
									exprCollation(node), 0);
	}
	return expression_tree_mutator(node, reuse_mutator, rc);
}

/*
 * For a projecting Result node over a chain of pass-through nodes
 * (is_pass_through) over an InferBatch node C, as PostgreSQL makes it
 * when it postpones a volatile or expensive target list above a Sort and
 * Limit (make_sort_input_target): the ML calls of the Result that are
 * calls C batches already (a condition of the WHERE clause) take C's
 * result column, brought up through the chain, instead of being sent
 * again.  The rows reaching the chain passed C, so the value is the one
 * the call would compute.  Anything of another shape is left as it is.
 */
static void
reuse_batched_calls(Plan *plan)
{
	ReuseContext rc = {NIL, NULL, 0, NIL};
	Plan	   *below;
	int			ncalls;

	if (!IsA(plan, Result) || plan->lefttree == NULL ||
		(!contains_ml((Node *) plan->targetlist) &&
		 !contains_ml((Node *) plan->qual)))
		return;
	for (below = plan->lefttree; is_pass_through(below); below = below->lefttree)
		rc.chain = lcons(below, rc.chain);
	if (!IsA(below, CustomScan) ||
		((CustomScan *) below)->methods != InferBatchMethods())
		return;
	rc.cscan = (CustomScan *) below;
	rc.nvars = intVal(linitial(rc.cscan->custom_private));
	ncalls = intVal(lsecond(rc.cscan->custom_private));
	for (int i = 0; i < ncalls; i++)
		rc.calls = lappend(rc.calls,
						   ((TargetEntry *) list_nth(rc.cscan->custom_scan_tlist,
													 rc.nvars + i))->expr);
	/* reuse_column appends bottom-up: C first, then the chain's nodes */
	plan->targetlist = (List *) reuse_mutator((Node *) plan->targetlist, &rc);
	plan->qual = (List *) reuse_mutator((Node *) plan->qual, &rc);
}

/* Rewrites each plan of list in place (see rewrite_plan). */
static void
rewrite_list(RewriteState *rs, List *plans)
{
	ListCell   *lc;

	foreach(lc, plans)
		lfirst(lc) = rewrite_plan(rs, lfirst(lc), NULL);
}

/*
 * Rewrites the tree under plan bottom-up and returns what replaces plan
 * (plan itself, or an InferBatch node above it).  limit: the Limit node
 * right above plan, or NULL.
 */
static Plan *
rewrite_plan(RewriteState *rs, Plan *plan, Limit *limit)
{
	bool		gather;

	if (plan == NULL)
		return NULL;
	check_stack_depth();

	/* the nodes under a Gather run in every process of the parallel query */
	gather = IsA(plan, Gather) || IsA(plan, GatherMerge);
	rs->gather_depth += gather ? 1 : 0;
	plan->lefttree = rewrite_plan(rs, plan->lefttree,
								  IsA(plan, Limit) ? (Limit *) plan : NULL);
	plan->righttree = rewrite_plan(rs, plan->righttree, NULL);
	switch (nodeTag(plan))
	{
		case T_Append:
			rewrite_list(rs, ((Append *) plan)->appendplans);
			break;
		case T_MergeAppend:
			rewrite_list(rs, ((MergeAppend *) plan)->mergeplans);
			break;
		case T_SubqueryScan:
			((SubqueryScan *) plan)->subplan =
				rewrite_plan(rs, ((SubqueryScan *) plan)->subplan, NULL);
			break;
		case T_CustomScan:
			rewrite_list(rs, ((CustomScan *) plan)->custom_plans);
			break;
		default:
			break;
	}
	rs->gather_depth -= gather ? 1 : 0;
	if (IsA(plan, NestLoop) || IsA(plan, MergeJoin) || IsA(plan, HashJoin))
		move_ml_join_filters((Join *) plan);
	reuse_batched_calls(plan);
	if (can_batch(plan))
	{
		Plan	   *batched = batch_node(rs, plan, limit);

		/*
		 * The calls left in the target list of the node just made (those
		 * after its quals, and calls over a nested call's result) go to
		 * another node above it, until none is left.
		 */
		while (batched != plan)
		{
			Plan	   *above = batch_after_filter(rs, (CustomScan *) batched,
												   limit);

			if (above == batched)
				break;
			batched = above;
		}
		return batched;
	}
	return plan;
}

/* Returns the largest plan_node_id in the tree under plan. */
static int
max_node_id(Plan *plan)
{
	int			max;
	List	   *more = NIL;
	ListCell   *lc;

	if (plan == NULL)
		return 0;
	max = Max(plan->plan_node_id,
			  Max(max_node_id(plan->lefttree), max_node_id(plan->righttree)));
	switch (nodeTag(plan))
	{
		case T_Append:
			more = ((Append *) plan)->appendplans;
			break;
		case T_MergeAppend:
			more = ((MergeAppend *) plan)->mergeplans;
			break;
		case T_BitmapAnd:
			more = ((BitmapAnd *) plan)->bitmapplans;
			break;
		case T_BitmapOr:
			more = ((BitmapOr *) plan)->bitmapplans;
			break;
		case T_SubqueryScan:
			max = Max(max, max_node_id(((SubqueryScan *) plan)->subplan));
			break;
		case T_CustomScan:
			more = ((CustomScan *) plan)->custom_plans;
			break;
		default:
			break;
	}
	foreach(lc, more)
		max = Max(max, max_node_id(lfirst(lc)));
	return max;
}

/*
 * Puts a Material node above plan (for a SCROLL cursor, which needs
 * backward scans that InferBatch cannot do), with a target list of
 * OUTER_VAR references as set_plan_references would have made.
 */
static Plan *
materialize_top(RewriteState *rs, Plan *plan)
{
	Material   *mat = makeNode(Material);
	ListCell   *lc;

	foreach(lc, plan->targetlist)
	{
		TargetEntry *tle = lfirst(lc);
		TargetEntry *copy = flatCopyTargetEntry(tle);

		copy->expr = (Expr *) makeVar(OUTER_VAR, tle->resno,
									  exprType((Node *) tle->expr),
									  exprTypmod((Node *) tle->expr),
									  exprCollation((Node *) tle->expr), 0);
		mat->plan.targetlist = lappend(mat->plan.targetlist, copy);
	}
	mat->plan.startup_cost = plan->startup_cost;
	mat->plan.total_cost = plan->total_cost;
	mat->plan.plan_rows = plan->plan_rows;
	mat->plan.plan_width = plan->plan_width;
	mat->plan.parallel_safe = false;
	mat->plan.plan_node_id = rs->next_node_id++;
	mat->plan.extParam = bms_copy(plan->extParam);
	mat->plan.allParam = bms_copy(plan->allParam);
	mat->plan.lefttree = plan;
	return (Plan *) mat;
}

/*
 * planner_hook: plans with the previous hook (or the standard planner),
 * then rewrites the plan as the banner says when infer.enable_batching is
 * on and the extension is installed in this database.
 */
static PlannedStmt *
infer_planner(Query *parse, const char *query_string, int cursorOptions,
			  ParamListInfo boundParams)
{
	PlannedStmt *stmt;
	RewriteState rs;
	ListCell   *lc;

	if (prev_planner_hook)
		stmt = prev_planner_hook(parse, query_string, cursorOptions,
								 boundParams);
	else
		stmt = standard_planner(parse, query_string, cursorOptions,
								boundParams);

	if (!infer_enable_batching ||
		(stmt->commandType != CMD_SELECT && stmt->commandType != CMD_INSERT) ||
		stmt->hasModifyingCTE || stmt->rowMarks != NIL)
		return stmt;
	if (!ml_valid)
		ml_lookup();
	if (!OidIsValid(ml_oids[INFER_FN_OCR]) &&
		!OidIsValid(ml_oids[INFER_FN_DETECT_TEXT]) &&
		!OidIsValid(ml_oids[INFER_FN_PREDICT]) &&
		!OidIsValid(ml_oids[INFER_FN_CLASSIFY]) &&
		!OidIsValid(ml_oids[INFER_FN_EMBED]) &&
		!OidIsValid(ml_oids[INFER_FN_CLASSIFY_TEXT]))
		return stmt;

	rs.gather_depth = 0;
	rs.batched_cost = 0.0;
	rs.next_node_id = max_node_id(stmt->planTree);
	foreach(lc, stmt->subplans)
		rs.next_node_id = Max(rs.next_node_id, max_node_id(lfirst(lc)));
	rs.next_node_id++;

	stmt->planTree = rewrite_plan(&rs, stmt->planTree, NULL);
	redo_jit_decision(stmt, rs.batched_cost);
	foreach(lc, stmt->subplans)
		lfirst(lc) = rewrite_plan(&rs, lfirst(lc), NULL);

	if ((cursorOptions & CURSOR_OPT_SCROLL) &&
		!ExecSupportsBackwardScan(stmt->planTree))
		stmt->planTree = materialize_top(&rs, stmt->planTree);
	return stmt;
}

/*
 * Installs the planner hook (chaining the previous one) and the pg_proc
 * invalidation callback.  Called once from _PG_init.
 */
void
InferPlannerInit(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = infer_planner;
	CacheRegisterSyscacheCallback(PROCOID, ml_invalidate, (Datum) 0);
}
