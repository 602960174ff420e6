/*
 * request.h
 *	  A request as the worker receives it: the header frame unpacked (with
 *	  the pre-scan that refuses Fragment chains nested too deep before
 *	  protobuf-c recurses into them) and checked against the payload frames
 *	  that came with it.  Everything the worker does with a message starts
 *	  here, so this is also what the protocol fuzz target drives
 *	  (tests/fuzz/fuzz_protocol.c).
 *
 * Threading: no state; any thread.
 */
#ifndef INFER_REQUEST_H
#define INFER_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "common/pg_infer.pb-c.h"

/* Most rows (payload frames) one request may carry. */
#define REQUEST_MAX_ROWS 65536

/*
 * Longest chain of Fragment.next a request may carry (the protocol's
 * chains have two stages; protobuf-c unpacks, sizes and frees nested
 * messages recursively, so a header nesting next a million deep would
 * overflow the stack before any check of the unpacked message).
 */
#define REQUEST_MAX_FRAGMENT_DEPTH 16

/* Why request_unpack refused a header frame. */
typedef struct request_refusal
{
	const char *reason;			/* "it carries more than 16 fragments", ... */
	int			limit;			/* 1: a limit on its shape (SQLSTATE 54000),
								 * 0: not a pginfer.Header (08P01) */
	uint64_t	request_id;		/* its request_id, when limit (else 0) */
} request_refusal;

/*
 * Unpacks a header frame of len bytes; NULL when it is no pginfer.Header,
 * or when it nests Fragment.next deeper than REQUEST_MAX_FRAGMENT_DEPTH,
 * carries more than PGINFER_MAX_REQUEST_FRAGMENTS fragments, or names
 * more models than that many fragments of full stages hold (common/
 * protocol.h): those are refused unread, from a scan of the wire bytes,
 * since protobuf-c would allocate every message of them first (and
 * placement pins each model); *why (may be NULL) then says why, with
 * the request_id the scan read for a refusal by limit.  The models of
 * each stage (PGINFER_MAX_FRAGMENT_MODELS) are checked once unpacked, by
 * request_check_header.  Header.client comes back cut at
 * PGINFER_CLIENT_MAX bytes.
 * Free with pginfer__header__free_unpacked(h, NULL).
 */
Pginfer__Header *request_unpack(const void *data, size_t len, request_refusal *why);

/*
 * Checks an unpacked request header: protocol version, a part for its
 * kind (run, model), the input-cache fields (one digest of 32 bytes or
 * none per row; cached rows ascending, in range, with a digest), and
 * n_payload payload frames as the kind needs (run: one per row id, at
 * most REQUEST_MAX_ROWS, and at most PGINFER_MAX_RESULT_ROWS rows over
 * all its fragments, each stage with at most PGINFER_MAX_FRAGMENT_MODELS
 * models; put-model: one, the file's bytes; the others: none).  Returns 0, or -1 with
 * *sqlstate (PGINFER_SQLSTATE_TOO_LARGE for too many rows, result rows
 * or models a stage, _PROTOCOL
 * otherwise) and a message in err.
 */
int			request_check_header(const Pginfer__Header *h, int n_payload,
								 const char **sqlstate, char *err, size_t errlen);

/*
 * The group key of a run-fragment request: its packed Fragment, then its
 * max_pixels (8 bytes), then each of more_fragments packed, each with its
 * length (8 bytes) in front, every ModelSpec packed without its name;
 * malloc'd (*len bytes); NULL when memory runs out.  Two requests may
 * share a run exactly when their keys match: models that differ only in
 * name (registered models of one file, kind, labels and preprocessing)
 * compute the same.
 */
uint8_t    *request_group_key(const Pginfer__RunFragment *run, size_t *len);

/*
 * A copy of the chain f, f->next, ... whose ModelSpecs have the empty
 * name, every other field shared with f (which must outlive the copy):
 * a run of requests whose models differ in name only runs this, so that
 * its messages name the model file rather than one request's model.
 * malloc'd, one block a stage; NULL when memory runs out (or f is NULL).
 * Free with request_fragment_unnamed_free.
 */
Pginfer__Fragment *request_fragment_unnamed(const Pginfer__Fragment *f);
void		request_fragment_unnamed_free(Pginfer__Fragment *f);

/*
 * Whether the chains a and b (of one group key) name the same model at
 * every stage: 1 or 0.
 */
int			request_same_names(const Pginfer__Fragment *a, const Pginfer__Fragment *b);

/*
 * Fragment f of run: 0 is run->fragment, f > 0 more_fragments[f - 1]
 * (0 <= f <= n_more_fragments; NULL where the request has none).
 */
const Pginfer__Fragment *request_fragment_at(const Pginfer__RunFragment *run,
											 size_t f);

/* Name of a message kind ("MSG_RUN_FRAGMENT"), for messages and logs. */
const char *request_kind_name(Pginfer__MsgKind kind);

#endif							/* INFER_REQUEST_H */
