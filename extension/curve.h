/*-------------------------------------------------------------------------
 *
 * curve.h
 *	  ZeroMQ CURVE on the backends' side (docs/security.md "Encryption:
 *	  CURVE"): the backend's key pair, named by two superuser-only settings,
 *	  and the server public key of each worker that has one.
 *
 * catalog.c notes each worker's server_public_key as it reads
 * infer.worker_registry (InferCurveNoteServerKey); client.c asks, before it
 * creates a worker's socket, for the keys to use (InferCurveClientKeys:
 * NULL for a plain worker) and applies them (InferCurveApply).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_INFER_CURVE_H
#define PG_INFER_CURVE_H

/* Length of a Z85 key in text (32 bytes -> 40 characters). */
#define INFER_CURVE_Z85_LEN 40

/* The keys a CURVE client socket needs, all Z85 and NUL-ended. */
typedef struct InferCurveKeys
{
	char		server_public[INFER_CURVE_Z85_LEN + 1];
	char		client_public[INFER_CURVE_Z85_LEN + 1];
	char		client_secret[INFER_CURVE_Z85_LEN + 1];
} InferCurveKeys;

/* infer.curve_secret_key_file and infer.curve_public_key_file (guc.c). */
extern char *infer_curve_secret_key_file;
extern char *infer_curve_public_key_file;

extern void InferCurveNoteServerKey(const char *endpoint, const char *server_key);
extern const char *InferCurveKnownServerKey(const char *endpoint);
extern const InferCurveKeys *InferCurveClientKeys(const char *endpoint,
												  const char *worker_name);
extern int	InferCurveApply(void *sock, const InferCurveKeys *keys);

#endif							/* PG_INFER_CURVE_H */
