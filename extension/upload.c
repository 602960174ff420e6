/*-------------------------------------------------------------------------
 *
 * upload.c
 *	  Sends the bytes of an uploaded model file to a worker (MSG_PUT_MODEL):
 *	  infer._push_model, which infer.upload_model, infer.push_models and
 *	  infer.add_worker call (sql/pg_infer--0.2.sql; docs/security.md
 *	  "Uploaded models").
 *
 * infer.upload_model keeps the bytes in infer.model_files with their
 * SHA-256; the catalog (catalog.c) puts that digest into the ModelSpec of
 * every model registered on the file, and workers check it whenever they
 * load the model.  The bytes go to a worker as one payload frame after a
 * header naming the file and the digest; the worker recomputes the digest,
 * stores the bytes by it and answers MSG_PONG, or MSG_ERROR (a digest
 * mismatch is XX001).  The call waits for the answer up to infer.timeout.
 *
 * Runs in a backend's main thread.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_infer.h"

#include "fmgr.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(infer_push_model);

/*
 * infer._push_model(worker text, file text, sha256 bytea, data bytea):
 * sends data, uploaded as model file `file` with SHA-256 sha256 (32
 * bytes), to the registered worker of that name and waits for its answer.
 * Errors: 42704 for an unknown worker, 22023 for a digest that is not 32
 * bytes; the worker's own error
 * (XX001 when the bytes it got have another digest, 22023 for an unsafe
 * name); the client's (08006 unreachable, 57014 no answer in time).
 */
Datum
infer_push_model(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *file = text_to_cstring(PG_GETARG_TEXT_PP(1));
	bytea	   *sha = PG_GETARG_BYTEA_PP(2);
	bytea	   *data = PG_GETARG_BYTEA_PP(3);
	int			nworkers;
	InferWorker *workers;
	InferWorker worker;
	Pginfer__Header hdr = PGINFER__HEADER__INIT;
	Pginfer__ModelRequest mreq = PGINFER__MODEL_REQUEST__INIT;
	Pginfer__ModelSpec spec = PGINFER__MODEL_SPEC__INIT;
	const void *payloads[1];
	size_t		lens[1];

	/* the registry, read through the catalog, also notes CURVE keys */
	workers = InferCatalogGetWorkers(&nworkers);
	memset(&worker, 0, sizeof(worker));
	for (int i = 0; i < nworkers && worker.name == NULL; i++)
		if (strcmp(workers[i].name, name) == 0)
			worker = workers[i];
	if (worker.name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("inference worker \"%s\" does not exist", name),
				 errhint("See infer.workers.")));
	worker.pool_slot = 0;
	if (VARSIZE_ANY_EXHDR(sha) != PGINFER_SHA256_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("SHA-256 of model file \"%s\" has %d bytes, expected %d",
						file, (int) VARSIZE_ANY_EXHDR(sha), PGINFER_SHA256_LEN)));

	spec.file = file;
	spec.sha256.data = (uint8_t *) VARDATA_ANY(sha);
	spec.sha256.len = PGINFER_SHA256_LEN;
	mreq.model = &spec;
	hdr.kind = PGINFER__MSG_KIND__MSG_PUT_MODEL;
	hdr.model = &mreq;
	payloads[0] = VARDATA_ANY(data);
	lens[0] = VARSIZE_ANY_EXHDR(data);
	(void) InferClientModelRequest(&worker, &hdr, 1, payloads, lens,
								   psprintf("refused model file \"%s\"", file),
								   "model upload");
	PG_RETURN_VOID();
}
