/*
 * tests/asan/ubsan_log.c: linked into every program and into pg_infer.so
 * of the check-asan build (tests/asan/run.sh passes it to the linker in
 * OPT/COPT as -Wl,<object>), so that UndefinedBehaviorSanitizer writes its
 * reports to files as AddressSanitizer does.
 *
 * gcc links -fsanitize=address,undefined programs with two runtimes,
 * libasan and libubsan, each with its own copy of sanitizer_common.  The
 * UBSan runtime, started as ASan's plug-in, reads UBSAN_OPTIONS but does
 * not apply its log_path (only its stand-alone start does), so its reports
 * go to stderr, which the test harnesses keep in logs they delete.  This
 * constructor hands libubsan's own __sanitizer_set_report_path the prefix
 * in $CHECK_ASAN_UBSAN_LOG (files PREFIX.PID, written only when there is a
 * report); without that variable, or without libubsan, it does nothing.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

/* check_asan_ubsan_log: point libubsan's reports at $CHECK_ASAN_UBSAN_LOG. */
__attribute__((constructor)) static void
check_asan_ubsan_log(void)
{
	const char *path = getenv("CHECK_ASAN_UBSAN_LOG");
	void	   *ubsan;
	void		(*set_path) (const char *);

	if (path == NULL || path[0] == '\0')
		return;
	ubsan = dlopen("libubsan.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (ubsan == NULL)
		return;
	set_path = (void (*) (const char *)) dlsym(ubsan, "__sanitizer_set_report_path");
	if (set_path != NULL)
		set_path(path);
	dlclose(ubsan);
}
