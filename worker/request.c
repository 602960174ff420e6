/*
 * request.c
 *	  Unpacking and checking a request's header frame (see request.h).
 *
 * Threading: no state; any thread.
 */
#include "worker/request.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/protocol.h"

#define CPP_STR_(x) #x
#define CPP_STR(x) CPP_STR_(x)

/* Reads a varint at *p (< end) into *v; 0, or -1 if it runs past end. */
static int
wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && *p < end; shift += 7)
	{
		uint8_t		b = *(*p)++;

		*v |= (uint64_t) (b & 0x7f) << shift;
		if ((b & 0x80) == 0)
			return 0;
	}
	return -1;
}

/*
 * Most ModelSpecs a header may hold in all: every stage of every fragment
 * full.  The scan refuses a second copy of a message field that is not
 * repeated (below), so every stage is one Fragment on the wire; the
 * models of each stage are checked once unpacked (request_check_header).
 */
#define REQUEST_MAX_MODELS 768
_Static_assert(REQUEST_MAX_MODELS == PGINFER_MAX_REQUEST_FRAGMENTS *
			   REQUEST_MAX_FRAGMENT_DEPTH * PGINFER_MAX_FRAGMENT_MODELS,
			   "REQUEST_MAX_MODELS: every stage of every fragment full");

/* What wire_scan finds of a header (see request_unpack). */
typedef struct wire_counts
{
	int			depth;			/* the deepest Fragment.next chain */
	int			fragments;		/* RunFragment.fragment + more_fragments */
	int			models;			/* Fragment.models fields, in all */
	int			copies;			/* a message field that is not repeated
								 * came twice in one message */
} wire_counts;

/* Whether c passes a limit already (the scan stops there). */
static int
wire_over(const wire_counts *c)
{
	return c->depth > REQUEST_MAX_FRAGMENT_DEPTH ||
		c->fragments > PGINFER_MAX_REQUEST_FRAGMENTS ||
		c->models > REQUEST_MAX_MODELS || c->copies;
}

/*
 * Reads the tag and the extent of the field at *p (< end): *num the field
 * number, *wt the wire type, [*body, *body + *len) its bytes (the value
 * of a varint in *len); *p moves past it.  0, or -1 when the bytes are not
 * valid wire format there (the unpack rejects them).
 */
static int
wire_field(const uint8_t **p, const uint8_t *end, uint32_t *num, int *wt,
		   const uint8_t **body, uint64_t *len)
{
	uint64_t	tag;

	if (wire_varint(p, end, &tag) != 0 || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX)
		return -1;
	*num = (uint32_t) (tag >> 3);
	*wt = (int) (tag & 7);
	*body = *p;
	switch (*wt)
	{
		case 0:
			return wire_varint(p, end, len);
		case 1:
			*len = 8;
			break;
		case 5:
			*len = 4;
			break;
		case 2:
			if (wire_varint(p, end, len) != 0)
				return -1;
			*body = *p;
			break;
		default:
			return -1;
	}
	if (*len > (uint64_t) (end - *p))
		return -1;
	*p += *len;
	return 0;
}

/*
 * Counts into *c what the wire bytes [p, end) of a message of type desc
 * (a Fragment at chain depth `chain`) hold, from the schema's descriptors:
 * every message field is followed, so that a field that is not repeated
 * but comes twice in one message is seen (protobuf-c merges the copies,
 * each merge copying the repeated fields gathered so far: 200000 copies
 * of Header.run, 5 bytes each, held a worker's loop for 12 s), as are the
 * depth of the deepest Fragment chain, the fragments of the RunFragment
 * and the models of all fragments.  Stops once one passes its limit (so
 * the scan recurses at most REQUEST_MAX_FRAGMENT_DEPTH deep in a chain;
 * no other message of the schema nests itself).  Bytes that are not valid
 * wire format end the scan: the unpack rejects them.
 */
static void
wire_scan(const uint8_t *p, const uint8_t *end,
		  const ProtobufCMessageDescriptor *desc, int chain, wire_counts *c)
{
	uint64_t	seen = 0;		/* fields (by index) that are not repeated */

	if (desc == &pginfer__fragment__descriptor && chain > c->depth)
		c->depth = chain;
	while (p < end && !wire_over(c))
	{
		uint32_t	num;
		int			wt;
		const uint8_t *body;
		uint64_t	len;
		const ProtobufCFieldDescriptor *f;
		unsigned	idx;

		if (wire_field(&p, end, &num, &wt, &body, &len) != 0)
			return;
		f = protobuf_c_message_descriptor_get_field(desc, num);
		if (f == NULL || wt != 2 || f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		idx = (unsigned) (f - desc->fields);
		if (f->label != PROTOBUF_C_LABEL_REPEATED && idx < 64)
		{
			if (seen & ((uint64_t) 1 << idx))
			{
				c->copies = 1;
				return;
			}
			seen |= (uint64_t) 1 << idx;
		}
		if (desc == &pginfer__run_fragment__descriptor &&
			(num == 1 || num == 4))
			c->fragments++;
		else if (desc == &pginfer__fragment__descriptor && num == 2)
			c->models++;
		if (!wire_over(c))
			wire_scan(body, body + len, f->descriptor,
					  desc == &pginfer__fragment__descriptor ? chain + 1 : 1, c);
	}
}

/* The last Header.request_id in the header bytes [p, end), or 0. */
static uint64_t
wire_request_id(const uint8_t *p, const uint8_t *end)
{
	uint64_t	id = 0;

	while (p < end)
	{
		uint32_t	num;
		int			wt;
		const uint8_t *body;
		uint64_t	len;

		if (wire_field(&p, end, &num, &wt, &body, &len) != 0)
			break;
		if (num == 3 && wt == 0)
			id = len;
	}
	return id;
}

/*
 * Header.client cut at PGINFER_CLIENT_MAX bytes (in place); the log
 * escapes what it holds (log_escape: control bytes, bytes not UTF-8).
 */
static void
clean_client(Pginfer__Header *h)
{
	if (h->client != NULL && strlen(h->client) > PGINFER_CLIENT_MAX)
		h->client[PGINFER_CLIENT_MAX] = '\0';
}

/* Unpacks a header frame, or refuses it; see request.h. */
Pginfer__Header *
request_unpack(const void *data, size_t len, request_refusal *why)
{
	const uint8_t *p = data;
	wire_counts c = {0, 0, 0, 0};
	Pginfer__Header *h;
	request_refusal dummy;

	if (why == NULL)
		why = &dummy;
	why->limit = 0;
	why->request_id = 0;
	wire_scan(p, p + len, &pginfer__header__descriptor, 0, &c);
	if (wire_over(&c))
	{
		why->limit = 1;
		why->request_id = wire_request_id(p, p + len);
		why->reason = c.copies ?
			"a message field that is not repeated comes more than once" :
			c.depth > REQUEST_MAX_FRAGMENT_DEPTH ?
			"it chains Fragment.next more than " CPP_STR(REQUEST_MAX_FRAGMENT_DEPTH) " deep" :
			c.fragments > PGINFER_MAX_REQUEST_FRAGMENTS ?
			"it carries more than " CPP_STR(PGINFER_MAX_REQUEST_FRAGMENTS) " fragments" :
			"its fragments name more than " CPP_STR(REQUEST_MAX_MODELS) " models";
		return NULL;
	}
	h = pginfer__header__unpack(NULL, len, p);
	if (h == NULL)
		why->reason = "it is not a pginfer.Header";
	else
		clean_client(h);
	return h;
}

/*
 * Checks that no stage of f's chain has more than
 * PGINFER_MAX_FRAGMENT_MODELS models; 0, or -1 with a message in err.
 */
static int
check_stage_models(const Pginfer__Fragment *f, size_t which, char *err,
				   size_t errlen)
{
	for (int stage = 1; f != NULL; f = f->next, stage++)
		if (f->n_models > PGINFER_MAX_FRAGMENT_MODELS)
		{
			snprintf(err, errlen, "MSG_RUN_FRAGMENT request: stage %d of fragment %zu has %zu models, more than the %d a stage may have",
					 stage, which, f->n_models, PGINFER_MAX_FRAGMENT_MODELS);
			return -1;
		}
	return 0;
}

/* Name of a message kind, for messages and logs. */
const char *
request_kind_name(Pginfer__MsgKind kind)
{
	const ProtobufCEnumValue *v =
		protobuf_c_enum_descriptor_get_value(&pginfer__msg_kind__descriptor, kind);

	return v != NULL ? v->name : "MSG_(unknown kind)";
}

/*
 * Checks a RunFragment's input-cache fields: input_sha256 none or one per
 * row, each empty or PGINFER_SHA256_LEN bytes; cached_rows ascending, in
 * range, each with a digest; input_scope at most PGINFER_INPUT_SCOPE_MAX
 * bytes.  Returns 0, or -1 with a message in err.
 */
static int
check_input_fields(const Pginfer__RunFragment *run, char *err, size_t errlen)
{
	if (run->input_scope.len > PGINFER_INPUT_SCOPE_MAX)
	{
		snprintf(err, errlen, "MSG_RUN_FRAGMENT request: input_scope has %zu bytes, at most %d are allowed",
				 run->input_scope.len, PGINFER_INPUT_SCOPE_MAX);
		return -1;
	}
	if (run->n_input_sha256 != 0 && run->n_input_sha256 != run->n_row_ids)
	{
		snprintf(err, errlen, "MSG_RUN_FRAGMENT request with %zu input digests for %zu rows",
				 run->n_input_sha256, run->n_row_ids);
		return -1;
	}
	for (size_t i = 0; i < run->n_input_sha256; i++)
		if (run->input_sha256[i].len != 0 && run->input_sha256[i].len != PGINFER_SHA256_LEN)
		{
			snprintf(err, errlen, "MSG_RUN_FRAGMENT request: input digest of row %zu has %zu bytes, expected %d",
					 i, run->input_sha256[i].len, PGINFER_SHA256_LEN);
			return -1;
		}
	for (size_t k = 0; k < run->n_cached_rows; k++)
	{
		uint32_t	r = run->cached_rows[k];

		if (r >= run->n_row_ids || (k > 0 && r <= run->cached_rows[k - 1]) ||
			run->n_input_sha256 == 0 || run->input_sha256[r].len != PGINFER_SHA256_LEN)
		{
			snprintf(err, errlen, "MSG_RUN_FRAGMENT request: cached row %u is out of range, out of order or has no input digest",
					 r);
			return -1;
		}
	}
	return 0;
}

/* Checks version, kind and frame count of a request header; see request.h. */
int
request_check_header(const Pginfer__Header *h, int n_payload,
					const char **sqlstate, char *err, size_t errlen)
{
	int			want = 0;

	*sqlstate = PGINFER_SQLSTATE_PROTOCOL;
	if (h->version != PGINFER_PROTOCOL_VERSION)
	{
		snprintf(err, errlen,
				 "protocol version mismatch: the request uses version %u, this worker speaks version %d",
				 h->version, PGINFER_PROTOCOL_VERSION);
		return -1;
	}
	switch (h->kind)
	{
		case PGINFER__MSG_KIND__MSG_PING:
		case PGINFER__MSG_KIND__MSG_CANCEL:
			break;
		case PGINFER__MSG_KIND__MSG_RUN_FRAGMENT:
			if (h->run == NULL || h->run->fragment == NULL)
			{
				snprintf(err, errlen, "%s request without a fragment",
						 request_kind_name(h->kind));
				return -1;
			}
			if (h->run->n_row_ids > REQUEST_MAX_ROWS)
			{
				*sqlstate = PGINFER_SQLSTATE_TOO_LARGE;
				snprintf(err, errlen, "%s request with %zu rows, more than the %d one request may carry",
						 request_kind_name(h->kind), h->run->n_row_ids, REQUEST_MAX_ROWS);
				return -1;
			}
			if (h->run->n_row_ids * (1 + h->run->n_more_fragments) > PGINFER_MAX_RESULT_ROWS)
			{
				*sqlstate = PGINFER_SQLSTATE_TOO_LARGE;
				snprintf(err, errlen, "%s request of %zu rows for %zu fragments: %zu result rows, more than the %d one request may ask",
						 request_kind_name(h->kind), h->run->n_row_ids,
						 1 + h->run->n_more_fragments,
						 h->run->n_row_ids * (1 + h->run->n_more_fragments),
						 PGINFER_MAX_RESULT_ROWS);
				return -1;
			}
			*sqlstate = PGINFER_SQLSTATE_TOO_LARGE;
			for (size_t f = 0; f <= h->run->n_more_fragments; f++)
				if (check_stage_models(request_fragment_at(h->run, f), f, err, errlen) != 0)
					return -1;
			*sqlstate = PGINFER_SQLSTATE_PROTOCOL;
			want = (int) h->run->n_row_ids;
			if (check_input_fields(h->run, err, errlen) != 0)
				return -1;
			break;
		case PGINFER__MSG_KIND__MSG_LOAD_MODEL:
		case PGINFER__MSG_KIND__MSG_UNLOAD_MODEL:
			if (h->model == NULL || h->model->model == NULL)
			{
				snprintf(err, errlen, "%s request without a model",
						 request_kind_name(h->kind));
				return -1;
			}
			break;
		case PGINFER__MSG_KIND__MSG_PUT_MODEL:
			if (h->model == NULL || h->model->model == NULL)
			{
				snprintf(err, errlen, "%s request without a model",
						 request_kind_name(h->kind));
				return -1;
			}
			want = 1;			/* the model file's bytes */
			break;
		default:
			snprintf(err, errlen, "a worker does not accept %s messages",
					 request_kind_name(h->kind));
			return -1;
	}
	if (n_payload != want)
	{
		snprintf(err, errlen, "%s request has %d payload frames, expected %d",
				 request_kind_name(h->kind), n_payload, want);
		return -1;
	}
	return 0;
}

/* The unnamed copy of f; see request.h. */
Pginfer__Fragment *
request_fragment_unnamed(const Pginfer__Fragment *f)
{
	Pginfer__Fragment *head = NULL;
	Pginfer__Fragment **link = &head;

	for (; f != NULL; f = f->next)
	{
		size_t		n = f->n_models;
		Pginfer__Fragment *c;
		Pginfer__ModelSpec **ptrs;
		Pginfer__ModelSpec *specs;

		c = malloc(sizeof(*c) + n * (sizeof(*ptrs) + sizeof(*specs)));
		if (c == NULL)
		{
			request_fragment_unnamed_free(head);
			return NULL;
		}
		*c = *f;
		c->next = NULL;
		ptrs = (Pginfer__ModelSpec **) (c + 1);
		specs = (Pginfer__ModelSpec *) (ptrs + n);
		for (size_t m = 0; m < n; m++)
		{
			ptrs[m] = NULL;
			if (f->models[m] == NULL)
				continue;
			specs[m] = *f->models[m];
			specs[m].name = (char *) protobuf_c_empty_string;
			ptrs[m] = &specs[m];
		}
		c->models = n > 0 ? ptrs : NULL;
		*link = c;
		link = &c->next;
	}
	return head;
}

/* Frees what request_fragment_unnamed returned (NULL: nothing). */
void
request_fragment_unnamed_free(Pginfer__Fragment *f)
{
	while (f != NULL)
	{
		Pginfer__Fragment *next = f->next;

		free(f);
		f = next;
	}
}

/* Fragment f of run; see request.h. */
const Pginfer__Fragment *
request_fragment_at(const Pginfer__RunFragment *run, size_t f)
{
	return f == 0 ? run->fragment : run->more_fragments[f - 1];
}

/* Whether the stages of a and b name the same models (same structure). */
int
request_same_names(const Pginfer__Fragment *a, const Pginfer__Fragment *b)
{
	for (; a != NULL && b != NULL; a = a->next, b = b->next)
	{
		if (a->n_models != b->n_models)
			return 0;
		for (size_t m = 0; m < a->n_models; m++)
		{
			const Pginfer__ModelSpec *x = a->models[m],
					   *y = b->models[m];

			if ((x == NULL) != (y == NULL) ||
				(x != NULL && strcmp(x->name ? x->name : "", y->name ? y->name : "") != 0))
				return 0;
		}
	}
	return a == NULL && b == NULL;
}

/*
 * The group key of a run-fragment request; see request.h.  With
 * more_fragments, each of them follows, packed, with its length before
 * it (so that no two lists of fragments give the same bytes).  The
 * models' names are left out (unnamed copies are packed): two registered
 * models of one file, kind, labels and preprocessing compute the same
 * (bench/placement's mt5_a and mt5_b), so their requests share a run.
 */
uint8_t *
request_group_key(const Pginfer__RunFragment *run, size_t *len)
{
	size_t		nf = 1 + run->n_more_fragments;
	Pginfer__Fragment **u = calloc(nf, sizeof(*u));
	uint8_t    *key = NULL;
	size_t		total = sizeof(int64_t),
				n = 0;
	int64_t		mp = run->max_pixels;

	if (u == NULL)
		return NULL;
	/* u[0]: fragment, u[1 + f]: more_fragments[f]; NULL for none */
	for (size_t f = 0; f < nf; f++)
	{
		const Pginfer__Fragment *src = request_fragment_at(run, f);

		if (src == NULL)
			continue;
		if ((u[f] = request_fragment_unnamed(src)) == NULL)
			goto done;
		total += pginfer__fragment__get_packed_size(u[f]) + (f > 0 ? sizeof(uint64_t) : 0);
	}
	key = malloc(total);
	if (key == NULL)
		goto done;
	if (u[0] != NULL)
		n = pginfer__fragment__pack(u[0], key);
	memcpy(key + n, &mp, sizeof(mp));
	n += sizeof(mp);
	for (size_t f = 1; f < nf; f++)
	{
		uint64_t	flen;

		if (u[f] == NULL)
			continue;
		flen = pginfer__fragment__get_packed_size(u[f]);
		memcpy(key + n, &flen, sizeof(flen));
		n += sizeof(flen);
		n += pginfer__fragment__pack(u[f], key + n);
	}
	*len = n;

done:
	for (size_t f = 0; f < nf; f++)
		request_fragment_unnamed_free(u[f]);
	free(u);
	return key;
}
