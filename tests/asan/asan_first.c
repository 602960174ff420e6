/*
 * tests/asan/asan_first.c: a library that check-asan (tests/asan/run.sh)
 * preloads into the postgres server after libasan and libubsan, so that
 * AddressSanitizer initializes before glibc's gettext lock is held.
 *
 * An executable that was not built with -fsanitize=address (postgres) and
 * gets libasan by LD_PRELOAD initializes the runtime on its first
 * intercepted call.  Library constructors run before that: libgpg-error's
 * and libgnutls's call bindtextdomain(), whose malloc() then initializes
 * ASan while glibc holds _nl_state_lock for writing; the runtime's
 * initialization calls dlerror(), which takes the same lock for reading
 * (dcgettext), and the lock is left corrupt: every later bindtextdomain()
 * (PostgreSQL's set_pglocale_pgservice) waits forever.  libp11-kit's
 * constructor does the same with newlocale() and __libc_setlocale_lock.
 * Here bindtextdomain(), bind_textdomain_codeset() and newlocale() make one
 * allocation first, outside the lock, then call glibc's.  Not linked into
 * any program.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <locale.h>
#include <stdlib.h>

/* asan_first: one malloc()/free(), so that libasan's interceptor has
 * initialized the runtime before any gettext lock is taken. */
static void
asan_first(void)
{
	static volatile int done;

	if (!done)
	{
		void	   *volatile p = malloc(1);

		free(p);
		done = 1;
	}
}

/* bindtextdomain: glibc's, after asan_first(). */
char *
bindtextdomain(const char *domain, const char *dir)
{
	static char *(*real) (const char *, const char *);

	asan_first();
	if (real == NULL)
		real = (char *(*) (const char *, const char *)) dlsym(RTLD_NEXT, "bindtextdomain");
	return real(domain, dir);
}

/* bind_textdomain_codeset: glibc's, after asan_first(). */
char *
bind_textdomain_codeset(const char *domain, const char *codeset)
{
	static char *(*real) (const char *, const char *);

	asan_first();
	if (real == NULL)
		real = (char *(*) (const char *, const char *)) dlsym(RTLD_NEXT, "bind_textdomain_codeset");
	return real(domain, codeset);
}

/* newlocale: glibc's, after asan_first(). */
locale_t
newlocale(int category_mask, const char *locale, locale_t base)
{
	static locale_t (*real) (int, const char *, locale_t);

	asan_first();
	if (real == NULL)
		real = (locale_t (*) (int, const char *, locale_t)) dlsym(RTLD_NEXT, "newlocale");
	return real(category_mask, locale, base);
}
