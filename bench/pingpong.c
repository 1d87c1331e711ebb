// bench/profile_costs.js's switches row: two processes on one CPU pass a
// byte back and forth through pipes N times (two context switches a round
// trip). Usage: pingpong N CPU DELAY_MS (DELAY_MS: a pause after the fork,
// for a program to be attached to the parent). Prints the CPU time (user +
// system, both processes) and the wall time per switch, as JSON.
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static double ns(struct timeval a, struct timeval b)
{
	return (a.tv_sec + b.tv_sec) * 1e9 + (a.tv_usec + b.tv_usec) * 1e3;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	int a[2], b[2];
	char c = 'x';
	cpu_set_t set;
	struct rusage me, child;
	double t0, t1;
	pid_t pid;

	if (pipe(a) || pipe(b))
		return 1;
	CPU_ZERO(&set);
	CPU_SET(argc > 2 ? atoi(argv[2]) : 0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		for (long i = 0; i < n; i++)
			if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1)
				_exit(1);
		_exit(0);
	}
	usleep(argc > 3 ? atoi(argv[3]) * 1000 : 0);
	t0 = now();
	for (long i = 0; i < n; i++)
		if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
			return 1;
	waitpid(pid, NULL, 0);
	t1 = now();
	getrusage(RUSAGE_SELF, &me);
	getrusage(RUSAGE_CHILDREN, &child);
	printf("{\"cpuNsPerSwitch\":%.1f,\"wallNsPerSwitch\":%.1f}\n",
	       (ns(me.ru_utime, me.ru_stime) + ns(child.ru_utime, child.ru_stime)) / (2.0 * n), (t1 - t0) / (2.0 * n));
	return 0;
}
