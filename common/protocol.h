/*
 * protocol.h
 *	  The pg_infer wire protocol, shared by the extension and infer-worker.
 *
 * A message is a ZeroMQ multipart message.  Between a backend's DEALER
 * socket and the worker's ROUTER socket:
 *
 *	  frame 0	   a Pginfer__Header (common/pg_infer.proto), protobuf-c packed
 *	  frame 1..n   payload: for MSG_RUN_FRAGMENT one frame per row (the raw
 *				   image bytes; for FRAG_EMBED_TEXT the text in UTF-8, no
 *				   terminating zero); for MSG_RESULT one frame per RowResult (the row's
 *				   float32 values in host byte order, empty when the row has
 *				   none)
 *
 * (The ROUTER side also sees the peer's routing-id frame first; the worker
 * strips it on receive and puts it back on send.)
 *
 * Every header carries PGINFER_PROTOCOL_VERSION; a receiver that sees
 * another version answers MSG_ERROR with PGINFER_SQLSTATE_PROTOCOL and never
 * interprets the rest.  This header is plain C11 and includes nothing from
 * PostgreSQL, so both sides can use it.
 */
#ifndef PGINFER_PROTOCOL_H
#define PGINFER_PROTOCOL_H

#include "common/pg_infer.pb-c.h"

#define PGINFER_PROTOCOL_VERSION 1

/* Default decoded-image limit: 50 megapixels. */
#define PGINFER_DEFAULT_MAX_PIXELS (50LL * 1000 * 1000)

/*
 * SQLSTATEs used in per-row and per-request errors.  They are PostgreSQL's
 * codes (src/backend/utils/errcodes.txt) so the extension can re-raise them
 * as they are.
 */
#define PGINFER_SQLSTATE_BAD_IMAGE		"22P03"	/* invalid_binary_representation */
#define PGINFER_SQLSTATE_TOO_LARGE		"54000"	/* program_limit_exceeded */
#define PGINFER_SQLSTATE_BAD_PARAM		"22023"	/* invalid_parameter_value */
#define PGINFER_SQLSTATE_NO_MODEL		"58P01"	/* undefined_file */
#define PGINFER_SQLSTATE_INTERNAL		"XX000"	/* internal_error */
#define PGINFER_SQLSTATE_PROTOCOL		"08P01"	/* protocol_violation */
#define PGINFER_SQLSTATE_OUT_OF_MEMORY	"53200"	/* out_of_memory */
#define PGINFER_SQLSTATE_BAD_TEXT		"22021"	/* character_not_in_repertoire */
#define PGINFER_SQLSTATE_IN_USE			"55006"	/* object_in_use */

/*
 * Worker state (MSG_STATE on the worker's PUB socket, and the body of
 * MSG_PONG): a worker publishes at least every PGINFER_STATE_PERIOD_MS
 * and, after a change (a request queued, started or finished, a model
 * loaded or evicted), within PGINFER_STATE_COALESCE_MS; a subscriber that
 * hears nothing for several periods may take the worker for stalled.
 * WorkerState.state_endpoint, in every PONG, says where to subscribe; a
 * message is the packed Header alone (one frame), subscribe to "".
 */
#define PGINFER_STATE_PERIOD_MS		100
#define PGINFER_STATE_COALESCE_MS	10

#endif							/* PGINFER_PROTOCOL_H */
