/*
 * tests/asan/selftest.c: three faults that check-asan (tests/asan/run.sh)
 * must see before it trusts a run with no reports: "overflow" writes past
 * a heap block (AddressSanitizer), "leak" loses a block (LeakSanitizer),
 * "shift" shifts a negative value left (UndefinedBehaviorSanitizer, its
 * report file written through ubsan_log.c).  Built with the run's flags.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* main: argv[1] names the fault; argc keeps the compiler from folding it. */
int
main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "overflow") == 0)
	{
		char	   *p = malloc(4);

		p[argc + 2] = 1;
		free(p);
	}
	else if (argc > 1 && strcmp(argv[1], "leak") == 0)
	{
		void	   *volatile p = malloc(77);

		p = NULL;
		(void) p;
	}
	else if (argc > 1 && strcmp(argv[1], "shift") == 0)
		printf("%d\n", -argc << 1);
	return 0;
}
