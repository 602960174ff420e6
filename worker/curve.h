/*
 * curve.h
 *	  ZeroMQ CURVE for infer-worker (docs/security.md "Encryption: CURVE"):
 *	  the worker's key pair, the list of client public keys it accepts, and
 *	  the ZAP handler (ZeroMQ RFC 27) that enforces that list.
 *
 * Key files hold one Z85 key (40 characters, zmq_z85_encode of 32 bytes)
 * on a line; blank lines and lines starting with '#' are skipped, except
 * a line of exactly 40 Z85 characters, which is a key ('#' is one of the
 * Z85 characters: write comments as "# text").  The
 * allowed-clients file holds one client public key a line, same syntax.
 * A secret key file that anyone but its owner may read or write is refused
 * (as ssh refuses a private key with mode 0644).
 *
 * Process-wide: main() calls curve_configure() once, before any socket
 * exists; the server then calls curve_zap_start() on its context and
 * curve_apply_server() on the request ROUTER before it binds (CURVE
 * server, the worker's secret key), and the state PUB socket
 * (worker/state.c) likewise.  libzmq sends every CURVE handshake's client key to the
 * handler on inproc://zeromq.zap.01, which answers 200 for a listed key and
 * 400 otherwise; a refused client gets no reply to anything (libzmq drops
 * the connection after the handshake).
 *
 * Threading: the ZAP handler is one thread with its own REP socket on the
 * server's context; it stops when the context is terminated (its socket
 * then returns ETERM and is closed, so zmq_ctx_term() can finish), and
 * curve_shutdown() joins it.  The allowed list is read-only after
 * curve_configure().
 */
#ifndef INFER_CURVE_H
#define INFER_CURVE_H

#include <stddef.h>

/* Length of a Z85 key in text (32 bytes -> 40 characters). */
#define CURVE_Z85_LEN 40

/*
 * Reads the first key of a key file: 40 Z85 characters that decode to 32
 * bytes.  With private set, the file must be a regular file that only its
 * owner may read or write (mode & 077 == 0).  Writes the key, NUL-ended,
 * to key (CURVE_Z85_LEN + 1 bytes).  0, or -1 with err.
 */
int			curve_read_key_file(const char *path, int private, char *key,
								char *err, size_t errlen);

/*
 * Parses the text of an allowed-clients file (NUL-ended): one Z85 public
 * key a line, '#' comments and blank lines skipped, surrounding blanks
 * ignored.  Sets *keys to a malloc'd array of *n 32-byte keys.  0, or -1
 * with err naming the first bad line (the whole file is then refused).
 */
int			curve_parse_allowed(const char *text, unsigned char (**keys)[32],
								int *n, char *err, size_t errlen);

/*
 * Loads the worker's secret key (secret_file, private) and its allowed
 * client keys (allowed_file) for the process; derives the public key
 * (zmq_curve_public).  Both NULL: CURVE stays off, 0.  Only one of them:
 * -1.  -1 with err on any failure (no CURVE in libzmq, unreadable or
 * malformed file, a secret key file open to others).
 */
int			curve_configure(const char *secret_file, const char *allowed_file,
							char *err, size_t errlen);

/* Whether curve_configure() turned CURVE on. */
int			curve_enabled(void);

/* The worker's public key in Z85 (what backends list), or "" when off. */
const char *curve_public_key(void);

/* How many client keys the allowed-clients file listed. */
int			curve_allowed_count(void);

/*
 * Starts the ZAP handler on ctx (bound to inproc://zeromq.zap.01) when
 * CURVE is on; a no-op otherwise.  Call once, before the first CURVE
 * socket binds.  0, or -1 with err.
 */
int			curve_zap_start(void *ctx, char *err, size_t errlen);

/*
 * Makes sock (not yet bound) a CURVE server with the worker's secret key
 * when CURVE is on; a no-op otherwise.  0, or -1 with err.
 */
int			curve_apply_server(void *sock, char *err, size_t errlen);

/* Joins the ZAP handler (after zmq_ctx_term of its context); idempotent. */
void		curve_shutdown(void);

/*
 * Whether a ZeroMQ endpoint is reachable from this host only: ipc://,
 * inproc://, and tcp:// on 127.0.0.0/8, ::1 or localhost.  A wildcard host,
 * 0.0.0.0, other addresses and interface names are not.
 */
int			curve_endpoint_is_loopback(const char *endpoint);

/*
 * Writes a new key pair: PREFIX.key (the secret key, mode 0600) and
 * PREFIX.pub (the public key, mode 0644), each one Z85 line after a '#'
 * comment; refuses to overwrite an existing file.  0, or -1 with err.
 */
int			curve_keygen(const char *prefix, char *err, size_t errlen);

#endif							/* INFER_CURVE_H */
