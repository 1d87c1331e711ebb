/* The benchmark's load: N getppid() calls (argv[1]) in a tight loop, started
 * by a line on stdin (so that a consumer can attach to this pid first).
 * Prints {"ns_per_call", "start_ns", "end_ns"} (CLOCK_MONOTONIC, the clock of
 * bpf_ktime_get_ns) on stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	char line[16];
	long long a, b;

	if (!fgets(line, sizeof(line), stdin))
		return 1;
	a = now_ns();
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	b = now_ns();
	printf("{\"ns_per_call\":%.2f,\"start_ns\":%lld,\"end_ns\":%lld}\n", (double)(b - a) / n, a, b);
	return 0;
}
