/*
 * curve.c
 *	  ZeroMQ CURVE for infer-worker: key files, the allowed-clients list and
 *	  the ZAP handler thread (ZeroMQ RFC 27, https://rfc.zeromq.org/spec/27/).
 *
 * See curve.h for the file formats and the contract.  The configuration is
 * process-wide (set once by main before any socket exists, read-only
 * afterwards); the ZAP thread reads it and owns its REP socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "worker/curve.h"
#include "worker/log.h"

/* Largest key or allowed-clients file we read (1 MiB: ~24000 keys). */
#define CURVE_MAX_FILE (1 << 20)
/* The address libzmq sends ZAP requests to (RFC 27). */
#define ZAP_ENDPOINT "inproc://zeromq.zap.01"

static struct
{
	int			on;
	char		secret[CURVE_Z85_LEN + 1];
	char		public[CURVE_Z85_LEN + 1];
	unsigned char (*allowed)[32];
	int			n_allowed;
	void	   *zap_sock;		/* owned by the ZAP thread once started */
	pthread_t	zap_thread;
	int			zap_running;
}			curve;

/*
 * Reads a whole file (at most CURVE_MAX_FILE bytes) into a malloc'd
 * NUL-ended buffer; with private set, refuses a file open to group or
 * others, or not a regular file.  NULL with err.
 */
static char *
read_file(const char *path, int private, char *err, size_t errlen)
{
	struct stat st;
	char	   *buf = NULL;
	size_t		len = 0;
	ssize_t		got;
	int			fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
	{
		snprintf(err, errlen, "could not open \"%s\": %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) != 0)
	{
		snprintf(err, errlen, "could not stat \"%s\": %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode))
	{
		snprintf(err, errlen, "\"%s\" is not a regular file", path);
		goto fail;
	}
	if (private && (st.st_mode & 077) != 0)
	{
		snprintf(err, errlen, "secret key file \"%s\" has mode %04o: it must be readable by its owner only (chmod 600)",
				 path, (unsigned) (st.st_mode & 07777));
		goto fail;
	}
	if (st.st_size > CURVE_MAX_FILE)
	{
		snprintf(err, errlen, "\"%s\" is larger than %d bytes", path, CURVE_MAX_FILE);
		goto fail;
	}
	buf = malloc((size_t) st.st_size + 1);
	if (buf == NULL)
	{
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	while (len < (size_t) st.st_size &&
		   (got = read(fd, buf + len, (size_t) st.st_size - len)) != 0)
	{
		if (got < 0)
		{
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "could not read \"%s\": %s", path, strerror(errno));
			goto fail;
		}
		len += (size_t) got;
	}
	buf[len] = '\0';
	close(fd);
	return buf;

fail:
	free(buf);
	close(fd);
	return NULL;
}

/* Whether s (len bytes) is a 40-character Z85 key. */
static int
is_key(const char *s, size_t len)
{
	char		text[CURVE_Z85_LEN + 1];
	unsigned char raw[32];

	if (len != CURVE_Z85_LEN)
		return 0;
	memcpy(text, s, len);
	text[len] = '\0';
	return zmq_z85_decode(raw, text) != NULL;
}

/*
 * Next key line of *p: skips blank and '#' lines, trims blanks; sets
 * *start and *len (0 at the end of the text) and *lineno; advances *p.
 */
static void
next_key_line(const char **p, const char **start, size_t *len, int *lineno)
{
	while (**p != '\0')
	{
		const char *s = *p;
		const char *e = strchr(s, '\n');
		const char *end = e != NULL ? e : s + strlen(s);

		*p = e != NULL ? e + 1 : end;
		(*lineno)++;
		while (s < end && (*s == ' ' || *s == '\t'))
			s++;
		while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
			end--;
		/* Z85 has '#': a 40-character key that starts with it is a key */
		if (s == end || (*s == '#' && !is_key(s, (size_t) (end - s))))
			continue;
		*start = s;
		*len = (size_t) (end - s);
		return;
	}
	*start = NULL;
	*len = 0;
}

/* Decodes one 40-character Z85 key; -1 when it is not one. */
static int
decode_key(const char *s, size_t len, unsigned char out[32])
{
	char		text[CURVE_Z85_LEN + 1];

	if (len != CURVE_Z85_LEN)
		return -1;
	memcpy(text, s, len);
	text[len] = '\0';
	return zmq_z85_decode(out, text) != NULL ? 0 : -1;
}

/* Reads a key file; see curve.h. */
int
curve_read_key_file(const char *path, int private, char *key, char *err,
					size_t errlen)
{
	char	   *text = read_file(path, private, err, errlen);
	const char *p = text;
	const char *s;
	size_t		len;
	int			lineno = 0;
	unsigned char raw[32];

	if (text == NULL)
		return -1;
	next_key_line(&p, &s, &len, &lineno);
	if (s == NULL || decode_key(s, len, raw) != 0)
	{
		snprintf(err, errlen, "\"%s\" holds no Z85 key (40 characters on a line)", path);
		explicit_bzero(text, strlen(text));
		free(text);
		return -1;
	}
	memcpy(key, s, CURVE_Z85_LEN);
	key[CURVE_Z85_LEN] = '\0';
	explicit_bzero(raw, sizeof(raw));
	explicit_bzero(text, strlen(text));
	free(text);
	return 0;
}

/* Parses an allowed-clients file's text; see curve.h. */
int
curve_parse_allowed(const char *text, unsigned char (**keys)[32], int *n,
					char *err, size_t errlen)
{
	unsigned char (*out)[32] = NULL;
	int			count = 0,
				cap = 0,
				lineno = 0;
	const char *p = text;
	const char *s;
	size_t		len;

	for (;;)
	{
		next_key_line(&p, &s, &len, &lineno);
		if (s == NULL)
			break;
		if (count == cap)
		{
			unsigned char (*grown)[32];

			cap = cap > 0 ? cap * 2 : 16;
			grown = realloc(out, (size_t) cap * sizeof(*out));
			if (grown == NULL)
			{
				snprintf(err, errlen, "out of memory");
				goto fail;
			}
			out = grown;
		}
		if (decode_key(s, len, out[count]) != 0)
		{
			snprintf(err, errlen, "line %d is not a Z85 public key (40 characters)", lineno);
			goto fail;
		}
		count++;
	}
	*keys = out;
	*n = count;
	return 0;

fail:
	free(out);
	return -1;
}

/* Loads the process's CURVE configuration; see curve.h. */
int
curve_configure(const char *secret_file, const char *allowed_file, char *err,
				size_t errlen)
{
	char		e[512];
	char	   *text = NULL;

	if (secret_file == NULL && allowed_file == NULL)
		return 0;
	if (secret_file == NULL || allowed_file == NULL)
	{
		snprintf(err, errlen, "--curve-secret-key and --curve-allowed-clients go together");
		return -1;
	}
	if (!zmq_has("curve"))
	{
		snprintf(err, errlen, "this libzmq was built without CURVE (libsodium)");
		return -1;
	}
	if (curve_read_key_file(secret_file, 1, curve.secret, err, errlen) != 0)
		return -1;
	if (zmq_curve_public(curve.public, curve.secret) != 0)
	{
		snprintf(err, errlen, "could not derive the public key of \"%s\": %s",
				 secret_file, zmq_strerror(errno));
		return -1;
	}
	text = read_file(allowed_file, 0, err, errlen);
	if (text == NULL)
		return -1;
	if (curve_parse_allowed(text, &curve.allowed, &curve.n_allowed, e, sizeof(e)) != 0)
	{
		snprintf(err, errlen, "\"%s\": %s", allowed_file, e);
		free(text);
		return -1;
	}
	free(text);
	curve.on = 1;
	return 0;
}

/* Whether CURVE is on. */
int
curve_enabled(void)
{
	return curve.on;
}

/* The worker's Z85 public key, or "". */
const char *
curve_public_key(void)
{
	return curve.on ? curve.public : "";
}

/* The number of allowed client keys. */
int
curve_allowed_count(void)
{
	return curve.n_allowed;
}

/* Whether key (32 bytes) is in the allowed list. */
static int
key_allowed(const unsigned char *key)
{
	for (int i = 0; i < curve.n_allowed; i++)
		if (memcmp(curve.allowed[i], key, 32) == 0)
			return 1;
	return 0;
}

/*
 * Sends one ZAP reply (RFC 27 section "Reply"): version, request id,
 * status code and text, user id, empty metadata.
 */
static void
zap_reply(void *sock, const zmq_msg_t *request_id, const char *code,
		  const char *text, const char *user)
{
	zmq_send(sock, "1.0", 3, ZMQ_SNDMORE);
	zmq_send(sock, zmq_msg_data((zmq_msg_t *) request_id),
			 zmq_msg_size((zmq_msg_t *) request_id), ZMQ_SNDMORE);
	zmq_send(sock, code, strlen(code), ZMQ_SNDMORE);
	zmq_send(sock, text, strlen(text), ZMQ_SNDMORE);
	zmq_send(sock, user, strlen(user), ZMQ_SNDMORE);
	zmq_send(sock, "", 0, 0);
}

/*
 * The ZAP thread: answers each request (frames: version, request id,
 * domain, address, identity, mechanism, credentials...) with 200 for a
 * CURVE client whose key is listed, 400 otherwise.  Refusals are logged,
 * at most one line a second (clients retry every 100 ms or so), with the
 * count of the ones not logged.  Ends when the context terminates.
 */
static void *
zap_main(void *arg)
{
	void	   *sock = arg;
	time_t		last_log = 0;
	long		unlogged = 0;

	for (;;)
	{
		zmq_msg_t	f[8];
		int			n = 0,
					more = 1,
					terminated = 0;

		while (more)
		{
			zmq_msg_t	m;

			zmq_msg_init(&m);
			if (zmq_msg_recv(&m, sock, 0) < 0)
			{
				zmq_msg_close(&m);
				if (errno == EINTR)
					continue;
				terminated = 1;
				break;
			}
			more = zmq_msg_more(&m);
			if (n < 8)
				f[n++] = m;
			else
				zmq_msg_close(&m);
		}
		if (terminated)
		{
			for (int i = 0; i < n; i++)
				zmq_msg_close(&f[i]);
			break;
		}
		if (n < 6)
		{
			/* Not a ZAP request: RFC 27 says to drop it. */
			for (int i = 0; i < n; i++)
				zmq_msg_close(&f[i]);
			continue;
		}
		{
			char		address[128],
						mechanism[16],
						z85[CURVE_Z85_LEN + 1] = "";
			size_t		alen = zmq_msg_size(&f[3]),
						mlen = zmq_msg_size(&f[5]);
			int			ok = 0;

			alen = alen < sizeof(address) - 1 ? alen : sizeof(address) - 1;
			memcpy(address, zmq_msg_data(&f[3]), alen);
			address[alen] = '\0';
			mlen = mlen < sizeof(mechanism) - 1 ? mlen : sizeof(mechanism) - 1;
			memcpy(mechanism, zmq_msg_data(&f[5]), mlen);
			mechanism[mlen] = '\0';
			if (strcmp(mechanism, "CURVE") == 0 && n >= 7 &&
				zmq_msg_size(&f[6]) == 32)
			{
				zmq_z85_encode(z85, zmq_msg_data(&f[6]), 32);
				ok = key_allowed(zmq_msg_data(&f[6]));
			}
			if (ok)
			{
				zap_reply(sock, &f[1], "200", "OK", z85);
				log_debug("CURVE client %s from %s accepted", z85, address);
			}
			else
			{
				time_t		now = time(NULL);

				zap_reply(sock, &f[1], "400", "client key not listed", "");
				if (now != last_log)
				{
					log_warn("refused %s client %s from %s: key not in the allowed-clients file (%ld more refusals not logged)",
							 mechanism, z85[0] != '\0' ? z85 : "(no key)",
							 address, unlogged);
					last_log = now;
					unlogged = 0;
				}
				else
					unlogged++;
			}
		}
		for (int i = 0; i < n; i++)
			zmq_msg_close(&f[i]);
	}
	zmq_close(sock);
	return NULL;
}

/* Starts the ZAP handler on ctx; see curve.h. */
int
curve_zap_start(void *ctx, char *err, size_t errlen)
{
	void	   *sock;
	int			linger = 0;
	int			rc;

	if (!curve.on || curve.zap_running)
		return 0;
	sock = zmq_socket(ctx, ZMQ_REP);
	if (sock == NULL)
	{
		snprintf(err, errlen, "could not create the ZAP socket: %s", zmq_strerror(errno));
		return -1;
	}
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_bind(sock, ZAP_ENDPOINT) != 0)
	{
		snprintf(err, errlen, "could not bind the ZAP handler to %s: %s",
				 ZAP_ENDPOINT, zmq_strerror(errno));
		zmq_close(sock);
		return -1;
	}
	rc = pthread_create(&curve.zap_thread, NULL, zap_main, sock);
	if (rc != 0)
	{
		snprintf(err, errlen, "could not start the ZAP thread: %s", strerror(rc));
		zmq_close(sock);
		return -1;
	}
	curve.zap_sock = sock;
	curve.zap_running = 1;
	return 0;
}

/* Makes sock a CURVE server; see curve.h. */
int
curve_apply_server(void *sock, char *err, size_t errlen)
{
	int			one = 1;

	if (!curve.on)
		return 0;
	if (zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof(one)) != 0 ||
		zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, curve.secret, CURVE_Z85_LEN) != 0 ||
		zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, "pg_infer", 8) != 0)
	{
		snprintf(err, errlen, "could not make the socket a CURVE server: %s",
				 zmq_strerror(errno));
		return -1;
	}
	return 0;
}

/* Joins the ZAP thread; see curve.h. */
void
curve_shutdown(void)
{
	if (curve.zap_running)
	{
		pthread_join(curve.zap_thread, NULL);
		curve.zap_running = 0;
		curve.zap_sock = NULL;
	}
}

/* Whether endpoint is local to this host; see curve.h. */
int
curve_endpoint_is_loopback(const char *endpoint)
{
	const char *host;
	const char *colon;
	char		h[256];
	size_t		len;

	if (strncmp(endpoint, "ipc://", 6) == 0 || strncmp(endpoint, "inproc://", 9) == 0)
		return 1;
	if (strncmp(endpoint, "tcp://", 6) != 0)
		return 0;
	host = endpoint + 6;
	/* tcp://SOURCE;HOST:PORT is a connect form; a bind has none, but be safe */
	if (strchr(host, ';') != NULL)
		host = strchr(host, ';') + 1;
	colon = strrchr(host, ':');
	len = colon != NULL ? (size_t) (colon - host) : strlen(host);
	if (len == 0 || len >= sizeof(h))
		return 0;
	memcpy(h, host, len);
	h[len] = '\0';
	return strncmp(h, "127.", 4) == 0 || strcmp(h, "[::1]") == 0 ||
		strcmp(h, "::1") == 0 || strcmp(h, "localhost") == 0 ||
		strcmp(h, "lo") == 0;
}

/*
 * Creates path (O_EXCL) with mode and writes a comment line and key; 0,
 * or -1 with err.
 */
static int
write_key(const char *path, mode_t mode, const char *comment, const char *key,
		  char *err, size_t errlen)
{
	int			fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	FILE	   *f;

	if (fd < 0)
	{
		snprintf(err, errlen, "could not create \"%s\": %s", path, strerror(errno));
		return -1;
	}
	(void) fchmod(fd, mode);	/* whatever the umask */
	f = fdopen(fd, "w");
	if (f == NULL)
	{
		snprintf(err, errlen, "could not write \"%s\": %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	fprintf(f, "# %s\n%s\n", comment, key);
	if (fclose(f) != 0)
	{
		snprintf(err, errlen, "could not write \"%s\": %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Writes PREFIX.key and PREFIX.pub; see curve.h. */
int
curve_keygen(const char *prefix, char *err, size_t errlen)
{
	char		pub[CURVE_Z85_LEN + 1],
				sec[CURVE_Z85_LEN + 1];
	char		path_key[4096],
				path_pub[4096];

	if (!zmq_has("curve"))
	{
		snprintf(err, errlen, "this libzmq was built without CURVE (libsodium)");
		return -1;
	}
	if (snprintf(path_key, sizeof(path_key), "%s.key", prefix) >= (int) sizeof(path_key) ||
		snprintf(path_pub, sizeof(path_pub), "%s.pub", prefix) >= (int) sizeof(path_pub))
	{
		snprintf(err, errlen, "prefix too long");
		return -1;
	}
	if (zmq_curve_keypair(pub, sec) != 0)
	{
		snprintf(err, errlen, "zmq_curve_keypair failed: %s", zmq_strerror(errno));
		return -1;
	}
	if (write_key(path_key, 0600, "pg_infer CURVE secret key (keep it private)", sec, err, errlen) != 0)
		return -1;
	if (write_key(path_pub, 0644, "pg_infer CURVE public key", pub, err, errlen) != 0)
	{
		unlink(path_key);
		return -1;
	}
	memset(sec, 0, sizeof(sec));
	return 0;
}
