/*
 * client_util.c
 *	  File reading and header sending shared by worker-client and
 *	  batching-client (see client_util.h).
 *
 * Threading: no shared state; a socket from one thread at a time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "tests/integration/client_util.h"

/* Reads a whole file into a malloc'd buffer; NULL with a message on error. */
void *
client_read_file(const char *prog, const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	void	   *buf = NULL;
	long		n;

	if (f == NULL)
	{
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto fail;
	buf = malloc(n > 0 ? (size_t) n : 1);
	if (buf == NULL || fread(buf, 1, (size_t) n, f) != (size_t) n)
		goto fail;
	fclose(f);
	*len = (size_t) n;
	return buf;

fail:
	fprintf(stderr, "%s: could not read %s\n", prog, path);
	free(buf);
	fclose(f);
	return NULL;
}

/* Packs h and sends it as one frame (ZMQ_SNDMORE when more); 0 or -1. */
int
client_send_header(void *sock, const Pginfer__Header *h, int more)
{
	size_t		hl = pginfer__header__get_packed_size(h);
	uint8_t    *hb = malloc(hl > 0 ? hl : 1);
	int			rc = -1;

	if (hb == NULL)
		return -1;
	pginfer__header__pack(h, hb);
	if (zmq_send(sock, hb, hl, more ? ZMQ_SNDMORE : 0) >= 0)
		rc = 0;
	free(hb);
	return rc;
}
