/*-------------------------------------------------------------------------
 *
 * guc.c
 *	  The infer.* settings: those of the per-row functions and those of
 *	  batched execution (InferBatch).
 *
 * All but infer.max_workers (PGC_POSTMASTER: it sizes shared memory, and
 * exists only when the library is in shared_preload_libraries) and
 * infer.worker_timeout (PGC_SUSET) are PGC_USERSET: a session may change
 * them, and SET LOCAL in a transaction works.  The variables are read only by the backend's main
 * thread.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_infer.h"

#include <limits.h>

#include "miscadmin.h"
#include "utils/guc.h"

#include "curve.h"

bool		infer_enable_batching = true;
int			infer_batch_size = 64;
int			infer_batch_bytes = 16 * 1024 * 1024;
int			infer_max_inflight = 4;
int			infer_timeout_ms = 30000;
int			infer_on_error = INFER_ON_ERROR_ERROR;
int			infer_max_pixels = (int) PGINFER_DEFAULT_MAX_PIXELS;
int			infer_max_text_bytes = (int) PGINFER_DEFAULT_MAX_TEXT_BYTES;
char	   *infer_ocr_detector = NULL;
char	   *infer_ocr_classifier = NULL;
char	   *infer_ocr_recognizer = NULL;
bool		infer_text_truncate = true;
int			infer_pool_max_workers = 64;
int			infer_worker_timeout_ms = 2000;
int			infer_placement = INFER_PLACEMENT_COST;
int			infer_bandwidth_mb = 1000;
int			infer_input_cache_min_bytes = 1024;
int			infer_retries = 2;

static const struct config_enum_entry placement_options[] = {
	{"cost", INFER_PLACEMENT_COST, false},
	{"round_robin", INFER_PLACEMENT_ROUND_ROBIN, false},
	{"least_loaded", INFER_PLACEMENT_LEAST_LOADED, false},
	{"locality", INFER_PLACEMENT_LOCALITY, false},
	{NULL, 0, false}
};

static const struct config_enum_entry on_error_options[] = {
	{"error", INFER_ON_ERROR_ERROR, false},
	{"null", INFER_ON_ERROR_NULL, false},
	{NULL, 0, false}
};

/*
 * Defines every infer.* setting of this file.  Called once from _PG_init.
 */
void
InferGucInit(void)
{
	DefineCustomIntVariable("infer.timeout",
							"Time an inference call waits for its worker.",
							"Covers connecting to the worker and waiting for "
							"its reply while the worker answers none of the "
							"session's requests; on expiry the call fails and "
							"the worker is told to drop the request.",
							&infer_timeout_ms,
							30000, 1, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("infer.enable_batching",
							 "Enables the planner's use of InferBatch nodes.",
							 "When on, ML calls in the target list and WHERE "
							 "clause of scans and joins are sent to the "
							 "workers in batches; off gives one request per "
							 "row.  Takes effect at planning.",
							 &infer_enable_batching,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("infer.batch_size",
							"Most rows an InferBatch node sends in one request.",
							"The first batches of a scan are smaller (1, 2, "
							"4, ...) so that a LIMIT does not wait for a "
							"full batch.",
							&infer_batch_size,
							64, 1, 65536,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("infer.batch_bytes",
							"Most input bytes an InferBatch node sends in one "
							"request.",
							"A batch ends at infer.batch_size rows or at this "
							"many bytes of input, whichever comes first; a "
							"single larger row still goes alone.",
							&infer_batch_bytes,
							16 * 1024 * 1024, 1, INT_MAX,
							PGC_USERSET, GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("infer.max_inflight",
							"Most batches an InferBatch node keeps at the "
							"workers at once.",
							"Batches go round-robin over the registered "
							"workers; rows come back in input order.",
							&infer_max_inflight,
							4, 1, 1024,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("infer.retries",
							"Times a batch whose inference worker was lost is "
							"sent to another worker.",
							"A batch that loses its worker (it exited, dropped "
							"the connection or hung) goes to another worker that "
							"is up, at most this many times; a batch that lost "
							"two workers, or ran out of retries, is the error of "
							"its rows (SQLSTATE 08006).  0 never sends again.",
							&infer_retries,
							2, 0, 16,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("infer.on_error",
							 "What a row's inference error does: error or null.",
							 "With null, a row the worker rejects (bad image, "
							 "image too large, ...) gives NULL and a WARNING; "
							 "an unreachable worker still raises an ERROR.",
							 &infer_on_error,
							 INFER_ON_ERROR_ERROR, on_error_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("infer.max_pixels",
							"Largest decoded image, in pixels, a worker accepts.",
							"0 leaves the limit to the worker.",
							&infer_max_pixels,
							(int) PGINFER_DEFAULT_MAX_PIXELS, 0, INT_MAX,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("infer.max_text_bytes",
							"Longest text, in bytes, sent to a text model.",
							"infer.embed and infer.classify of a text refuse a "
							"longer one (SQLSTATE 54000, or NULL and a WARNING "
							"with infer.on_error = null) before it is copied or "
							"sent; 0 leaves the limit to the worker.",
							&infer_max_text_bytes,
							(int) PGINFER_DEFAULT_MAX_TEXT_BYTES, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomStringVariable("infer.ocr_detector",
							   "Registered model infer.ocr uses to find text.",
							   NULL,
							   &infer_ocr_detector,
							   "ppocr_det",
							   PGC_USERSET, 0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("infer.ocr_classifier",
							   "Registered model infer.ocr uses to turn "
							   "upside-down text lines; empty for none.",
							   NULL,
							   &infer_ocr_classifier,
							   "ppocr_cls",
							   PGC_USERSET, 0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("infer.ocr_recognizer",
							   "Registered model infer.ocr uses to read text "
							   "lines.",
							   NULL,
							   &infer_ocr_recognizer,
							   "ppocr_rec",
							   PGC_USERSET, 0,
							   NULL, NULL, NULL);

	/* a PGC_POSTMASTER setting can only be made at server start */
	if (process_shared_preload_libraries_in_progress)
		DefineCustomIntVariable("infer.max_workers",
								"Worker endpoints the shared pool state holds.",
								"Sizes the shared memory of the pool monitor "
								"(pg_infer in shared_preload_libraries); more "
								"registered workers are used without live "
								"state.",
								&infer_pool_max_workers,
								64, 1, 4096,
								PGC_POSTMASTER, 0,
								NULL, NULL, NULL);

	DefineCustomIntVariable("infer.worker_timeout",
							"Time without a heartbeat after which a worker is "
							"down.",
							"A down worker gets no new work while another "
							"is up; a worker is stale (still used) after "
							"half this time.",
							&infer_worker_timeout_ms,
							/*
							 * at least 2.5 heartbeats (a state every 100
							 * ms, pool.c), so that a worker that is up
							 * stays up
							 */
							2000, 250, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("infer.placement",
							 "How a batch's worker is chosen: cost, "
							 "round_robin, least_loaded or locality.",
							 "cost picks the least estimated finish time "
							 "(wait + model load + transfer + compute, see "
							 "docs/placement.md).",
							 &infer_placement,
							 INFER_PLACEMENT_COST, placement_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("infer.bandwidth",
							"Link bandwidth to the workers, in MB/s, for "
							"placement's transfer estimate.",
							NULL,
							&infer_bandwidth_mb,
							1000, 1, INT_MAX,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("infer.input_cache_min_bytes",
							"Smallest input that is named by its SHA-256, so "
							"that a worker holding it need not be sent it again.",
							"Inputs of at least this many bytes are hashed; one "
							"the chosen worker is believed to hold (its input "
							"cache's Bloom filter) is not sent.  0 hashes every "
							"input; -1 turns the input cache off.",
							&infer_input_cache_min_bytes,
							1024, -1, INT_MAX,
							PGC_USERSET, GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("infer.text_truncate",
							 "Cuts texts longer than a text model takes.",
							 "When on, infer.embed embeds the first tokens of "
							 "a longer text (as many as the model takes) and "
							 "raises a NOTICE once per statement; when off, "
							 "such a text raises an error.",
							 &infer_text_truncate,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	/* CURVE (curve.c): superuser only, as they name files the server reads */
	DefineCustomStringVariable("infer.curve_secret_key_file",
							   "File holding this server's CURVE secret key "
							   "(Z85), for workers added with a public key.",
							   "The file must be readable by its owner only.",
							   &infer_curve_secret_key_file,
							   "",
							   PGC_SUSET, GUC_SUPERUSER_ONLY,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("infer.curve_public_key_file",
							   "File holding this server's CURVE public key "
							   "(Z85), listed in the workers' "
							   "--curve-allowed-clients files.",
							   NULL,
							   &infer_curve_public_key_file,
							   "",
							   PGC_SUSET, 0,
							   NULL, NULL, NULL);
}
