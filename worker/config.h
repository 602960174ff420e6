/*
 * config.h
 *	  infer-worker's configuration file (--config FILE) and --print-config.
 *
 * The file is INI as libinih reads it: one "key = value" a line, '#' or
 * ';' comments, no sections.  Its keys are the long options of the
 * command line, without the dashes (the caller's getopt_long table is the
 * one list of both): "listen = tcp://127.0.0.1:5555", "model-dir = DIR".
 * Options without an argument, and those the caller names as no key
 * (actions such as --curve-keygen, and --config itself), are not keys.
 * Values go through the same function as the command line's, so a bad one
 * gets the same message, prefixed with FILE:LINE.  The command line is
 * read after the file: a flag overrides the file's key.
 *
 * config_print() writes the effective configuration in the file's format
 * (each key that is set, with its value; each unset key commented out with
 * its default), so that `infer-worker ... --print-config > w.conf` and
 * `infer-worker --config w.conf` run the same worker.
 *
 * Threading: a config belongs to the thread that reads the options.
 */
#ifndef INFER_CONFIG_H
#define INFER_CONFIG_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

typedef struct config config;

/*
 * Applies one option's value: code is the option's getopt code, flag how
 * to name it in a message ("--threads" or "threads"), value its text.
 * Returns 0, or -1 with a message in err ("threads must be ...").
 */
typedef int (*config_apply_fn) (void *arg, int code, const char *flag,
								const char *value, char *err, size_t errlen);

/*
 * Default text of an option for config_print (NULL: none, printed as an
 * empty commented key).
 */
typedef const char *(*config_default_fn) (int code);

/*
 * New configuration over longopts (terminated by a NULL name; borrowed,
 * must outlive the config); options whose code is in not_keys, and those
 * without an argument, are not keys.  NULL when memory runs out.
 */
config	   *config_new(const struct option *longopts, const char *not_keys);

/* Frees *c and the values it holds; sets *c to NULL. */
void		config_destroy(config **c);

/*
 * Reads the file at path: each key is looked up, recorded and handed to
 * apply.  Returns 0; or -1 with err: "PATH: could not open: REASON", or
 * "PATH:LINE: MESSAGE" for the first line that is no "key = value", a
 * section, an unknown key, a key set twice, an indented line (which libinih
 * would read as more of the key above), a line longer than libinih
 * takes (INI_MAX_LINE: 198 bytes and the newline), or a value apply
 * refuses.  Values stay valid until config_destroy.
 */
int			config_read(config *c, const char *path, config_apply_fn apply,
						void *arg, char *err, size_t errlen);

/*
 * Records value for the option with code (a command-line flag, which
 * overrides the file's); returns the recorded copy (valid until
 * config_destroy), or NULL when memory runs out or code is no key.
 */
const char *config_set(config *c, int code, const char *value);

/*
 * Writes the effective configuration to f in the file's format (see
 * above); defaults from default_of (may be NULL).  Returns 0, or -1 when
 * writing fails.
 */
int			config_print(const config *c, FILE *f, config_default_fn default_of);

#endif							/* INFER_CONFIG_H */
