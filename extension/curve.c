/*-------------------------------------------------------------------------
 *
 * curve.c
 *	  ZeroMQ CURVE on the backends' side: the backend's key pair from the
 *	  files that infer.curve_secret_key_file and infer.curve_public_key_file
 *	  name, and each worker's server public key from infer.worker_registry.
 *
 * Key files hold one Z85 key (40 characters) on a line; blank lines and
 * '#' lines that are not keys ('#' is a Z85 character) are skipped (the
 * files infer-worker --curve-keygen writes).
 * The secret key file must be readable by its owner only, as ssh asks of
 * a private key.  The pair is read once and kept until either setting
 * changes; the server keys are kept per endpoint for the backend's life.
 *
 * Everything here is backend-local (TopMemoryContext) and runs on the
 * backend's main thread.  The pool monitor has no database connection and
 * so no server keys: it talks plain ZeroMQ (docs/security.md).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_infer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "utils/memutils.h"

#include "curve.h"

char	   *infer_curve_secret_key_file = NULL;
char	   *infer_curve_public_key_file = NULL;

/* A worker endpoint's server key ("" when plain). */
typedef struct ServerKey
{
	struct ServerKey *next;
	char	   *endpoint;
	char		key[INFER_CURVE_Z85_LEN + 1];
} ServerKey;

static ServerKey *server_keys = NULL;

/* The backend's pair, and the settings it was read from. */
static InferCurveKeys client_keys;
static char *keys_secret_path = NULL;
static char *keys_public_path = NULL;

/* The hint of every error about the backend's own keys. */
#define CURVE_HINT "Set infer.curve_secret_key_file and infer.curve_public_key_file (superuser only) to the backend's key pair (infer-worker --curve-keygen PREFIX writes one), and list its public key in the worker's --curve-allowed-clients file."

/*
 * Records the server public key of endpoint as catalog.c reads it; NULL
 * or "" for a plain worker.
 */
void
InferCurveNoteServerKey(const char *endpoint, const char *server_key)
{
	ServerKey  *k;

	for (k = server_keys; k != NULL; k = k->next)
		if (strcmp(k->endpoint, endpoint) == 0)
			break;
	if (k == NULL)
	{
		k = MemoryContextAllocZero(TopMemoryContext, sizeof(ServerKey));
		k->endpoint = MemoryContextStrdup(TopMemoryContext, endpoint);
		k->next = server_keys;
		server_keys = k;
	}
	strlcpy(k->key, server_key != NULL ? server_key : "", sizeof(k->key));
}

/*
 * The server public key recorded for endpoint (InferCurveNoteServerKey):
 * "" for a plain worker, NULL when this process has recorded none.
 */
const char *
InferCurveKnownServerKey(const char *endpoint)
{
	for (ServerKey *k = server_keys; k != NULL; k = k->next)
		if (strcmp(k->endpoint, endpoint) == 0)
			return k->key;
	return NULL;
}

/*
 * Reads the first key of the file that setting (its name, for messages)
 * names into out; with private set, the file must be open to its owner
 * only.  ERROR 28000 on any failure.
 */
static void
read_key_file(const char *setting, const char *path, bool private, char *out)
{
	struct stat st;
	char		buf[4096];
	ssize_t		len;
	char	   *p;
	uint8		raw[32];
	int			fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				 errmsg("could not open CURVE key file \"%s\" (%s): %m", path, setting),
				 errhint(CURVE_HINT)));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
		(private && (st.st_mode & 077) != 0))
	{
		int			mode = (int) (st.st_mode & 07777);

		close(fd);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				 errmsg("CURVE secret key file \"%s\" (%s) must be a regular file readable by its owner only",
						path, setting),
				 errdetail("Its mode is %04o.", mode),
				 errhint("chmod 600 the file.")));
	}
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				 errmsg("could not read CURVE key file \"%s\" (%s): %m", path, setting)));
	buf[len] = '\0';
	for (p = buf; *p != '\0';)
	{
		char	   *e = strchr(p, '\n');
		char	   *next = e != NULL ? e + 1 : p + strlen(p);
		char	   *end = e != NULL ? e : next;

		while (*p == ' ' || *p == '\t')
			p++;
		while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
			end--;
		if (end > p)
		{
			char		save = *end;

			*end = '\0';
			if (end - p == INFER_CURVE_Z85_LEN && zmq_z85_decode(raw, p) != NULL)
			{
				memcpy(out, p, INFER_CURVE_Z85_LEN + 1);
				explicit_bzero(buf, sizeof(buf));
				return;
			}
			*end = save;
			/* a comment, unless it is a key ('#' is a Z85 character) */
			if (*p != '#')
				break;
		}
		p = next;
	}
	explicit_bzero(buf, sizeof(buf));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
			 errmsg("CURVE key file \"%s\" (%s) holds no Z85 key", path, setting),
			 errdetail("A key file holds one key of 40 Z85 characters on a line; lines starting with # are comments.")));
}

/*
 * The keys for a socket to the worker at endpoint (named worker_name in
 * messages): NULL when it has no server key (plain TCP).  ERROR 28000
 * when it has one and the backend's key pair is not set or not usable.
 */
const InferCurveKeys *
InferCurveClientKeys(const char *endpoint, const char *worker_name)
{
	ServerKey  *k;
	char		derived[INFER_CURVE_Z85_LEN + 1];

	for (k = server_keys; k != NULL; k = k->next)
		if (strcmp(k->endpoint, endpoint) == 0)
			break;
	if (k == NULL || k->key[0] == '\0')
		return NULL;
	if (infer_curve_secret_key_file == NULL || infer_curve_secret_key_file[0] == '\0' ||
		infer_curve_public_key_file == NULL || infer_curve_public_key_file[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				 errmsg("inference worker \"%s\" requires CURVE, but this backend has no CURVE key pair",
						worker_name),
				 errdetail("The worker was added with a server public key; infer.curve_secret_key_file and infer.curve_public_key_file are not both set."),
				 errhint(CURVE_HINT)));
	if (keys_secret_path == NULL || keys_public_path == NULL ||
		strcmp(keys_secret_path, infer_curve_secret_key_file) != 0 ||
		strcmp(keys_public_path, infer_curve_public_key_file) != 0)
	{
		InferCurveKeys fresh;

		read_key_file("infer.curve_secret_key_file", infer_curve_secret_key_file,
					  true, fresh.client_secret);
		read_key_file("infer.curve_public_key_file", infer_curve_public_key_file,
					  false, fresh.client_public);
		if (zmq_curve_public(derived, fresh.client_secret) != 0 ||
			strcmp(derived, fresh.client_public) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
					 errmsg("CURVE keys \"%s\" and \"%s\" are not a pair",
							infer_curve_secret_key_file, infer_curve_public_key_file),
					 errhint(CURVE_HINT)));
		client_keys = fresh;
		explicit_bzero(&fresh, sizeof(fresh));
		if (keys_secret_path != NULL)
			pfree(keys_secret_path);
		if (keys_public_path != NULL)
			pfree(keys_public_path);
		keys_secret_path = MemoryContextStrdup(TopMemoryContext, infer_curve_secret_key_file);
		keys_public_path = MemoryContextStrdup(TopMemoryContext, infer_curve_public_key_file);
	}
	memcpy(client_keys.server_public, k->key, sizeof(client_keys.server_public));
	return &client_keys;
}

/*
 * Makes sock (not yet connected) a CURVE client with keys; 0, or -1 with
 * zmq_errno() set.  Never ereports (the caller closes the socket first).
 */
int
InferCurveApply(void *sock, const InferCurveKeys *keys)
{
	if (zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, keys->server_public, INFER_CURVE_Z85_LEN) != 0 ||
		zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, keys->client_public, INFER_CURVE_Z85_LEN) != 0 ||
		zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, keys->client_secret, INFER_CURVE_Z85_LEN) != 0)
		return -1;
	return 0;
}
