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
 *				   terminating zero; empty for a row in cached_rows, whose
 *				   bytes the worker takes from its input cache); for
 *				   MSG_RESULT one frame per RowResult (the row's
 *				   float32 values in host byte order, empty when the row has
 *				   none); MSG_NEED_INPUT has none; MSG_PUT_MODEL has one
 *				   frame, the model file's bytes (at most the worker's
 *				   --max-message-bytes), checked against
 *				   Header.model.model.sha256 and stored by content hash
 *				   (worker/model_store.h)
 *
 * (The ROUTER side also sees the peer's routing-id frame first; the worker
 * strips it on receive and puts it back on send.)
 *
 * Every header carries PGINFER_PROTOCOL_VERSION; a receiver that sees
 * another version answers MSG_ERROR with PGINFER_SQLSTATE_PROTOCOL and never
 * interprets the rest.  Message kinds and fields are only ever appended;
 * a worker that predates a kind (MSG_PUT_MODEL, say) answers it with a
 * MSG_ERROR (PGINFER_SQLSTATE_PROTOCOL, "does not accept"), so adding one
 * keeps the version.  This header is plain C11 and includes nothing from
 * PostgreSQL, so both sides can use it.
 */
#ifndef PGINFER_PROTOCOL_H
#define PGINFER_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/pg_infer.pb-c.h"

#define PGINFER_PROTOCOL_VERSION 1

/*
 * The release this source is: the extension's default_version in
 * sql/pg_infer.control (test_metrics.sh checks they agree), which
 * infer-worker --version prints.
 */
#define PGINFER_RELEASE "0.2"

/*
 * The least --max-message-bytes a worker takes.  ZeroMQ applies the limit
 * (ZMQ_MAXMSGSIZE) to a frame as it arrives on the wire, and under CURVE
 * that frame is a MESSAGE command: the frame's bytes plus
 * PGINFER_CURVE_FRAME_OVERHEAD (the command name "\7MESSAGE", 8; a nonce,
 * 8; the box's MAC, 16; a flags byte, 1: RFC 26/CurveZMQ, "MESSAGE
 * command").  A worker publishes the largest payload it reads
 * (WorkerState.max_message_bytes: the limit less that overhead when CURVE
 * is on), so every worker reads a row of PGINFER_SMALL_ROW_BYTES, and a
 * backend asks the pool for the workers' limits only for a larger row.
 */
#define PGINFER_MIN_MESSAGE_BYTES 1024
#define PGINFER_CURVE_FRAME_OVERHEAD 33
#define PGINFER_SMALL_ROW_BYTES (PGINFER_MIN_MESSAGE_BYTES - PGINFER_CURVE_FRAME_OVERHEAD)

/* Default decoded-image limit: 50 megapixels. */
#define PGINFER_DEFAULT_MAX_PIXELS (50LL * 1000 * 1000)

/*
 * Default limit of one text row (FRAG_EMBED_TEXT, FRAG_CLASSIFY_TEXT), in
 * bytes: infer.max_text_bytes in a backend, --max-text-bytes in a worker.
 */
#define PGINFER_DEFAULT_MAX_TEXT_BYTES (1024LL * 1024)

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
#define PGINFER_SQLSTATE_CLIENT_LIMIT	"53400"	/* configuration_limit_exceeded:
												 * the client holds more than
												 * the worker's
												 * --max-client-bytes */
#define PGINFER_SQLSTATE_BAD_TEXT		"22021"	/* character_not_in_repertoire */
#define PGINFER_SQLSTATE_IN_USE			"55006"	/* object_in_use */
#define PGINFER_SQLSTATE_NOT_SUPPORTED	"0A000"	/* feature_not_supported: a
												 * model's operator, opset or
												 * tensor type */
#define PGINFER_SQLSTATE_DATA_CORRUPTED	"XX001"	/* data_corrupted: a row's
												 * bytes and SHA-256 differ */

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

/*
 * The input cache (RunFragment.input_sha256 / cached_rows, MSG_NEED_INPUT;
 * docs/placement.md).  Rows are named by the SHA-256 of their payload
 * bytes, and cached under their key within the request's scope (below).
 * A worker summarises the keys it holds in a Bloom filter
 * (B. H. Bloom, "Space/time trade-offs in hash coding with allowable
 * errors", CACM 13(7), 1970) of PGINFER_BLOOM_BITS bits, published as
 * WorkerState.input_bloom (bit i is bit i % 8, LSB first, of byte i / 8)
 * with bloom_hashes = PGINFER_BLOOM_HASHES.  The k bit indexes of a digest
 * come from double hashing (A. Kirsch and M. Mitzenmacher, "Less hashing,
 * same performance: building a better Bloom filter", ESA 2006):
 * g_i = h1 + i * h2 mod m, where h1 and h2 are the digest's first two
 * 64-bit little-endian words (h2 made odd, so that with m a power of two
 * the k indexes are distinct).  A SHA-256 is uniform, so no further
 * hashing is needed.  With n digests in it the false-positive rate is
 * about (1 - e^(-k n / m))^k: 1.3 % at n = 3400 (4 KiB, k = 5), which
 * only costs a MSG_NEED_INPUT round trip, never a wrong answer.
 */
#define PGINFER_SHA256_LEN		32

/*
 * The shape of a MSG_RUN_FRAGMENT a worker accepts (worker/request.c
 * refuses the others before unpacking them): at most
 * PGINFER_MAX_REQUEST_FRAGMENTS fragments (RunFragment.fragment and
 * more_fragments), each stage with at most PGINFER_MAX_FRAGMENT_MODELS
 * models (OCR's detector, classifier and recognizer), and at most
 * PGINFER_MAX_RESULT_ROWS rows over all fragments (rows times
 * fragments: the size of the answer).  A backend whose calls sharing an
 * input pass either count sends them in separate requests
 * (extension/inferbatch.c, group_calls and send_group).
 */
#define PGINFER_MAX_REQUEST_FRAGMENTS	16
#define PGINFER_MAX_FRAGMENT_MODELS		3
#define PGINFER_MAX_RESULT_ROWS			65536
/*
 * Most bytes of RunFragment.input_scope.  A row is cached under its key,
 * SHA-256(input_scope || digest) (the 32-byte digest itself when the scope
 * is empty), and the filter holds keys: a client that probes the filter
 * or leaves a row out finds only what was sent under its own scope.
 */
#define PGINFER_INPUT_SCOPE_MAX	64
/* Most bytes of Header.client a worker keeps (and logs). */
#define PGINFER_CLIENT_MAX		200
#define PGINFER_BLOOM_BITS		32768	/* m: a power of two */
#define PGINFER_BLOOM_BYTES		(PGINFER_BLOOM_BITS / 8)
#define PGINFER_BLOOM_HASHES	5		/* k */
/*
 * Most digests a worker puts in its filter: the most recently used ones,
 * so that a cache of many small inputs does not fill the filter (at n =
 * 4096 the false-positive rate is 2.2 %); inputs beyond are still cached
 * and used, but backends send them.
 */
#define PGINFER_BLOOM_MAX_ENTRIES 4096

/* Bit index i (0 <= i < k) of digest in a Bloom filter of m bits (m a power of two). */
static inline uint32_t
pginfer_bloom_index(const uint8_t *digest, uint32_t i, uint32_t m)
{
	uint64_t	h1 = 0,
				h2 = 0;

	for (int b = 7; b >= 0; b--)
	{
		h1 = (h1 << 8) | digest[b];
		h2 = (h2 << 8) | digest[8 + b];
	}
	h2 |= 1;
	return (uint32_t) ((h1 + (uint64_t) i * h2) & (uint64_t) (m - 1));
}

/* Sets digest's k bits in bloom (nbytes bytes, a power of two). */
static inline void
pginfer_bloom_add(uint8_t *bloom, size_t nbytes, uint32_t k,
				  const uint8_t *digest)
{
	for (uint32_t i = 0; i < k; i++)
	{
		uint32_t	bit = pginfer_bloom_index(digest, i, (uint32_t) (nbytes * 8));

		bloom[bit >> 3] |= (uint8_t) (1u << (bit & 7));
	}
}

/*
 * Whether bloom (nbytes bytes, a power of two, probed with k indexes) may
 * hold digest: false means certainly not; an empty filter (nbytes or k 0)
 * holds nothing.
 */
static inline bool
pginfer_bloom_probe(const uint8_t *bloom, size_t nbytes, uint32_t k,
					const uint8_t *digest)
{
	if (nbytes == 0 || k == 0 || (nbytes & (nbytes - 1)) != 0)
		return false;
	for (uint32_t i = 0; i < k; i++)
	{
		uint32_t	bit = pginfer_bloom_index(digest, i, (uint32_t) (nbytes * 8));

		if ((bloom[bit >> 3] & (1u << (bit & 7))) == 0)
			return false;
	}
	return true;
}

#endif							/* PGINFER_PROTOCOL_H */
