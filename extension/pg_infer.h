/*-------------------------------------------------------------------------
 *
 * pg_infer.h
 *	  Private declarations of the pg_infer extension, by the file that
 *	  defines them.
 *
 * The extension runs one backend's ML calls on infer-worker processes over
 * ZeroMQ (see DESIGN.md).  Everything here runs in a PostgreSQL backend's
 * main thread; only the ZeroMQ library's own I/O threads run beside it,
 * and they never call PostgreSQL code.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_INFER_H
#define PG_INFER_H

#include "postgres.h"

#include "common/protocol.h"

/* ----------
 * guc.c: the infer.* settings
 * ----------
 */

/* infer.on_error values */
typedef enum InferOnError
{
	INFER_ON_ERROR_ERROR,		/* a row's error aborts the statement */
	INFER_ON_ERROR_NULL			/* a row's error gives NULL and a WARNING */
} InferOnError;

extern int	infer_timeout_ms;
extern int	infer_on_error;
extern int	infer_max_pixels;
extern char *infer_ocr_detector;
extern char *infer_ocr_classifier;
extern char *infer_ocr_recognizer;

extern void InferGucInit(void);

/* ----------
 * catalog.c: workers and models from the extension's tables (via SPI)
 * ----------
 */

/* A worker as infer.worker_registry holds it. */
typedef struct InferWorker
{
	char	   *name;
	char	   *endpoint;
} InferWorker;

extern Pginfer__ModelSpec **InferCatalogGetModels(const char *const *names,
												  const char *const *gucs,
												  int nmodels);
extern InferWorker *InferCatalogPickWorker(void);

/* ----------
 * client.c: the ZeroMQ client (one context per backend, a DEALER socket
 * per worker endpoint)
 * ----------
 */

/*
 * A reply from a worker, copied out of ZeroMQ's buffers into the memory
 * context that was current at the call.
 */
typedef struct InferReply
{
	Pginfer__Header *header;	/* unpacked header (frame 0) */
	int			nframes;		/* payload frames after the header */
	char	  **frames;			/* frame i's bytes */
	size_t	   *frame_lens;
} InferReply;

extern void InferClientInit(void);
extern uint64 InferClientNextRequestId(void);
extern InferReply *InferClientCall(const InferWorker *worker,
								   Pginfer__Header *request,
								   const void *payload, size_t payload_len,
								   int timeout_ms);

/* ----------
 * functions.c: the SQL-callable functions (infer.ocr, infer.predict, ...)
 * ----------
 */

/* (nothing exported: the functions are reached through fmgr) */

#endif							/* PG_INFER_H */
