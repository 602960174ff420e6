/*
 * clients.c
 *	  What the worker holds for each client connection (clients.h).
 *
 * A chained hash table of entries keyed by routing id (FNV-1a).  Each entry
 * counts its bytes and its references (held requests and answer frames
 * ZeroMQ has not let go of); the socket loop's thread alone adds entries,
 * takes references and frees entries, and it frees one only when it sees
 * no reference left, so a reference dropped on another thread (the last
 * thing that thread does with the entry) never races a free.
 */
#include "worker/clients.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "worker/log.h"

#define CLIENT_BUCKETS 1024


struct client_entry
{
	client_entry *next;
	client_table *table;
	_Atomic int64_t bytes;		/* held requests and unread answers, counted */
	_Atomic int64_t unread;		/* the unread answers of those */
	_Atomic int64_t over_since; /* when unread went over the limit; 0: not */
	_Atomic int64_t refs;		/* client_hold and counted frames */
	client_over over;			/* client_set_over */
	size_t		id_len;
	unsigned char id[];
};

struct client_table
{
	client_entry *buckets[CLIENT_BUCKETS];
	_Atomic int64_t unread;		/* counted answer bytes of every client */
	int64_t		limit;			/* --max-client-bytes */
	int			lookups;
};

/* An answer frame counted for a client: the free callback's hint. */
typedef struct counted_frame
{
	client_entry *client;
	int64_t		counted;
} counted_frame;

static uint32_t
id_hash(const void *id, size_t len)
{
	const unsigned char *p = id;
	uint32_t	h = 2166136261u;

	for (size_t i = 0; i < len; i++)
	{
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

static int
entry_idle(client_entry *e)
{
	return atomic_load(&e->refs) == 0;
}

/*
 * Logs that a client that was over its limit holds nothing any more (its
 * entry is about to go: the over flag would go with it).
 */
static void
log_over_ended(const client_entry *e)
{
	char		hex[2 * 16 + 1];
	size_t		n = e->id_len < 16 ? e->id_len : 16;

	for (size_t i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", e->id[i]);
	hex[2 * n] = '\0';
	log_info("client (routing id %s) holds nothing any more (it read its answers, or its connection closed): under --max-client-bytes again",
			 hex);
}

/* Frees the idle entries of one bucket but keep (which may be NULL). */
static void
prune_bucket(client_entry **head, const client_entry *keep)
{
	client_entry **link = head;

	while (*link != NULL)
	{
		client_entry *e = *link;

		if (e != keep && entry_idle(e))
		{
			*link = e->next;
			if (e->over == CLIENT_OVER_LOGGED)
				log_over_ended(e);
			free(e);
		}
		else
			link = &e->next;
	}
}

client_table *
client_table_new(int64_t limit)
{
	client_table *t = calloc(1, sizeof(client_table));

	if (t != NULL)
		t->limit = limit;
	return t;
}

/* Monotonic clock in microseconds. */
static int64_t
mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void
client_table_destroy(client_table **t)
{
	if (t == NULL || *t == NULL)
		return;
	for (int b = 0; b < CLIENT_BUCKETS; b++)
	{
		client_entry *e = (*t)->buckets[b];

		while (e != NULL)
		{
			client_entry *next = e->next;

			free(e);
			e = next;
		}
	}
	free(*t);
	*t = NULL;
}

client_entry *
client_table_get(client_table *t, const void *id, size_t len)
{
	client_entry **head;
	client_entry *e;

	if (t == NULL || len > 255)
		return NULL;
	head = &t->buckets[id_hash(id, len) % CLIENT_BUCKETS];
	for (e = *head; e != NULL; e = e->next)
		if (e->id_len == len && memcmp(e->id, id, len) == 0)
			break;
	/* the entry looked up is kept: its client is here, and its flag with it */
	if (++t->lookups >= CLIENT_SWEEP_EVERY)
	{
		t->lookups = 0;
		for (int b = 0; b < CLIENT_BUCKETS; b++)
			prune_bucket(&t->buckets[b], e);
	}
	else
		prune_bucket(head, e);
	if (e != NULL)
		return e;
	e = calloc(1, sizeof(*e) + len);
	if (e == NULL)
		return NULL;
	e->table = t;
	e->id_len = len;
	memcpy(e->id, id, len);
	e->next = *head;
	*head = e;
	return e;
}

int64_t
client_held(const client_entry *c)
{
	return c != NULL ? atomic_load(&((client_entry *) c)->bytes) : 0;
}

int64_t
client_unread(const client_entry *c)
{
	return c != NULL ? atomic_load(&((client_entry *) c)->unread) : 0;
}

bool
client_stalled(client_entry *c)
{
	int64_t		since;
	int64_t		now = mono_us();

	if (c == NULL)
		return false;
	if (atomic_load(&c->unread) <= c->table->limit)
	{
		atomic_store(&c->over_since, 0);
		return false;
	}
	since = atomic_load(&c->over_since);
	if (since == 0)
	{
		/* over, and not noted yet (a release raced the note) */
		atomic_compare_exchange_strong(&c->over_since, &since, now);
		return false;
	}
	return now - since >= CLIENT_STALL_US;
}

int64_t
client_table_unread(const client_table *t)
{
	return t != NULL ? atomic_load(&((client_table *) t)->unread) : 0;
}

client_over
client_set_over(client_entry *c, client_over over)
{
	client_over was;

	if (c == NULL)
		return CLIENT_UNDER;
	was = c->over;
	c->over = over;
	return was;
}

int64_t
client_hold(client_entry *c, int64_t bytes)
{
	int64_t		counted = bytes + CLIENT_MESSAGE_OVERHEAD;

	if (c == NULL)
		return 0;
	atomic_fetch_add(&c->refs, 1);
	atomic_fetch_add(&c->bytes, counted);
	return counted;
}

void
client_release(client_entry *c, int64_t counted)
{
	if (c == NULL)
		return;
	atomic_fetch_sub(&c->bytes, counted);
	/* the last touch: the loop's thread may free c once refs is 0 */
	atomic_fetch_sub(&c->refs, 1);
}

/* ZeroMQ's free callback of an answer frame not counted. */
static void
free_plain(void *data, void *hint)
{
	(void) hint;
	free(data);
}

/* ZeroMQ's free callback of a counted answer frame (an I/O thread). */
static void
free_counted(void *data, void *hint)
{
	counted_frame *f = hint;
	client_entry *c = f->client;
	int64_t		counted = f->counted;

	free(data);
	atomic_fetch_sub(&c->table->unread, counted);
	if (atomic_fetch_sub(&c->unread, counted) - counted <= c->table->limit)
		atomic_store(&c->over_since, 0);
	free(f);
	client_release(c, counted);
}

int
client_msg_init(zmq_msg_t *m, void *buf, size_t len, client_entry *c)
{
	counted_frame *f;

	if (c == NULL)
		return zmq_msg_init_data(m, buf, len, free_plain, NULL);
	f = malloc(sizeof(*f));
	if (f == NULL)
		return -1;
	f->client = c;
	f->counted = client_hold(c, (int64_t) len);
	atomic_fetch_add(&c->table->unread, f->counted);
	if (atomic_fetch_add(&c->unread, f->counted) + f->counted > c->table->limit)
	{
		int64_t		none = 0;

		atomic_compare_exchange_strong(&c->over_since, &none, mono_us());
	}
	if (zmq_msg_init_data(m, buf, len, free_counted, f) != 0)
	{
		atomic_fetch_sub(&c->table->unread, f->counted);
		atomic_fetch_sub(&c->unread, f->counted);
		client_release(c, f->counted);
		free(f);
		return -1;
	}
	return 0;
}
