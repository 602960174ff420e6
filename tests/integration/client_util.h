/*
 * client_util.h
 *	  What the command-line clients of infer-worker share: the process
 *	  test's worker-client (tests/integration/worker_client.c) and the
 *	  batching bench's batching-client (bench/batching/bench_client.c).
 *
 * Threading: no shared state; a socket from one thread at a time.
 */
#ifndef CLIENT_UTIL_H
#define CLIENT_UTIL_H

#include <stddef.h>

#include "common/protocol.h"

/*
 * Reads a whole file into a malloc'd buffer and sets *len; NULL on error,
 * after a line "prog: path: reason" or "prog: could not read path" on stderr.
 */
extern void *client_read_file(const char *prog, const char *path, size_t *len);

/*
 * Packs h and sends it as one frame, with ZMQ_SNDMORE when more is set
 * (payload frames follow).  0 on success, -1 on no memory or a send error.
 */
extern int	client_send_header(void *sock, const Pginfer__Header *h, int more);

#endif							/* CLIENT_UTIL_H */
