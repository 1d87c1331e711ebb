/* The benchmark's reference consumer: C + libbpf (Debian's libbpf-dev) on the
 * same object as the node-libbpf consumers (bench/.build/stream.bpf.o, built
 * from __test__/bpf/stream.bpf.c), or a reader of bpftrace's printf lines.
 *
 *   consumer ring-nowakeup OBJ PID N   BPF_RB_NO_WAKEUP, ring_buffer__consume every 10 ms
 *   consumer ring-wakeup   OBJ PID N   default (adaptive) wakeups, ring_buffer__poll
 *   consumer perf          OBJ PID N   perf buffer, 64 pages per CPU, a wakeup per record
 *   consumer lines         -   -   N   lines on stdin whose last number is the seq
 *
 * Prints "ready" once attached. After SIGUSR1 (the load generator is done)
 * it drains until received + lost == N or nothing came for 500 ms, then
 * prints one JSON line: received, lost (counted by the kernel side), missing
 * (seqs 0..N-1 never received), first_ts (ts of the first record),
 * last_ns (CLOCK_MONOTONIC when the last record arrived) and cpu_s (user +
 * system seconds of this process, getrusage(RUSAGE_SELF), since "ready"),
 * warm_ns (the CPU per record between half and nine tenths of N received,
 * as bench/node_consumer.js reports it). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include "stream.h"

static volatile sig_atomic_t finishing;
static unsigned char *seen;
static long n_expected;
static unsigned long long received, unique, perf_lost, first_ts, last_ns;
static double cpu_at_ready;
/* CPU seconds and records received when half and nine tenths of N had come */
static double mark_cpu[2];
static unsigned long long mark_received[2];
static int marks;

/* user + system seconds of this process (every thread) */
static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static unsigned long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ULL + t.tv_nsec;
}

static void on_usr1(int sig)
{
	(void)sig;
	finishing = 1;
}

static inline void count(unsigned long long seq, unsigned long long ts)
{
	if (received++ == 0)
		first_ts = ts;
	if (seq < (unsigned long long)n_expected && !seen[seq]) {
		seen[seq] = 1;
		unique++;
	}
}

static int on_ring(void *ctx, void *data, size_t size)
{
	const struct stream_event *e = data;

	(void)ctx;
	if (size >= sizeof(*e))
		count(e->seq, e->ts);
	return 0;
}

static void on_perf(void *ctx, int cpu, void *data, __u32 size)
{
	const struct stream_event *e = data;

	(void)ctx;
	(void)cpu;
	if (size >= sizeof(*e))
		count(e->seq, e->ts);
}

static void on_perf_lost(void *ctx, int cpu, __u64 n)
{
	(void)ctx;
	(void)cpu;
	perf_lost += n;
}

/* the offset of global `var` in data section `sec` (".rodata", ".bss"), or -1 */
static long var_offset(struct bpf_object *obj, const char *sec, const char *var)
{
	struct btf *btf = bpf_object__btf(obj);
	int id = btf ? btf__find_by_name(btf, sec) : -1;
	const struct btf_type *t;
	const struct btf_var_secinfo *vs;

	if (id < 0)
		return -1;
	t = btf__type_by_id(btf, id);
	vs = btf_var_secinfos(t);
	for (int i = 0; i < btf_vlen(t); i++, vs++) {
		if (!strcmp(btf__name_by_offset(btf, btf__type_by_id(btf, vs->type)->name_off), var))
			return vs->offset;
	}
	return -1;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_WARN)
		return vfprintf(stderr, fmt, args);
	return 0;
}

/* after each poll: takes the marks warm_ns is computed from */
static void mark(void)
{
	if (marks < 2 && received * 10 >= (unsigned long long)n_expected * (marks ? 9 : 5)) {
		mark_cpu[marks] = cpu_seconds();
		mark_received[marks++] = received;
	}
}

static void report(unsigned long long lost)
{
	printf("{\"received\":%llu,\"lost\":%llu,\"missing\":%llu,\"first_ts\":%llu,\"last_ns\":%llu,\"cpu_s\":%.6f",
	       received, lost, (unsigned long long)n_expected - unique, first_ts, last_ns, cpu_seconds() - cpu_at_ready);
	if (marks == 2 && mark_received[1] > mark_received[0])
		printf(",\"warm_ns\":%.1f", (mark_cpu[1] - mark_cpu[0]) * 1e9 / (mark_received[1] - mark_received[0]));
	printf("}\n");
	fflush(stdout);
}

/* one "pid tid ts seq" line of bpftrace's printf */
static void count_line(char *line)
{
	unsigned long long v[4];
	int k = 0;
	char *p = line;

	if (*p < '0' || *p > '9')
		return; /* "Attaching 1 probe...", "@seq: N" */
	while (k < 4 && *p) {
		v[k++] = strtoull(p, &p, 10);
		while (*p == ' ')
			p++;
	}
	if (k == 4)
		count(v[3], v[2]);
}

static int run_lines(void)
{
	static char buf[1 << 16];
	size_t have = 0;
	unsigned long long quiet_since = 0;

	cpu_at_ready = cpu_seconds();
	printf("ready\n");
	for (;;) {
		struct pollfd pfd = { .fd = 0, .events = POLLIN };
		int r = poll(&pfd, 1, 20);

		if (r > 0) {
			ssize_t got = read(0, buf + have, sizeof(buf) - 1 - have);
			char *line, *nl;

			if (got <= 0)
				break;
			have += got;
			buf[have] = 0;
			line = buf;
			while ((nl = memchr(line, '\n', buf + have - line))) {
				*nl = 0;
				count_line(line);
				line = nl + 1;
			}
			have = buf + have - line;
			memmove(buf, line, have);
			mark();
			last_ns = now_ns();
			quiet_since = last_ns;
		}
		if (finishing) {
			if (received >= (unsigned long long)n_expected)
				break;
			if (!quiet_since)
				quiet_since = now_ns();
			if (now_ns() - quiet_since > 500000000ULL)
				break;
		}
	}
	report(0);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode, *path;
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *bss;
	struct bpf_link *link;
	struct ring_buffer *rb = NULL;
	struct perf_buffer *pb = NULL;
	const void *bss_data;
	const volatile __u64 *ring_full;
	long ring_full_at;
	unsigned long long last_seen = 0, quiet_since = 0;
	size_t bss_size;
	bool ring, nowakeup;
	int pid, err;

	if (argc < 5) {
		fprintf(stderr, "usage: %s ring-nowakeup|ring-wakeup|perf|lines OBJ PID N\n", argv[0]);
		return 2;
	}
	mode = argv[1];
	path = argv[2];
	pid = atoi(argv[3]);
	n_expected = atol(argv[4]);
	seen = calloc(n_expected ? n_expected : 1, 1);
	signal(SIGUSR1, on_usr1);
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (!strcmp(mode, "lines"))
		return run_lines();
	ring = strncmp(mode, "ring", 4) == 0;
	nowakeup = !strcmp(mode, "ring-nowakeup");
	if (!ring && strcmp(mode, "perf")) {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}

	libbpf_set_print(libbpf_quiet);
	obj = bpf_object__open_file(path, NULL);
	if (!obj) {
		fprintf(stderr, "open %s: %s\n", path, strerror(errno));
		return 1;
	}
	{
		/* .rodata: target_pid, sink, no_wakeup */
		struct bpf_map *rodata = bpf_object__find_map_by_name(obj, ".rodata");
		size_t sz;
		const void *init = rodata ? bpf_map__initial_value(rodata, &sz) : NULL;
		char *ro = init ? malloc(sz) : NULL;
		long pid_at = var_offset(obj, ".rodata", "target_pid");
		long sink_at = var_offset(obj, ".rodata", "sink");
		long wakeup_at = var_offset(obj, ".rodata", "no_wakeup");

		if (!ro || pid_at < 0 || sink_at < 0 || wakeup_at < 0) {
			fprintf(stderr, "%s: no .rodata target_pid, sink and no_wakeup\n", path);
			return 1;
		}
		memcpy(ro, init, sz);
		*(__u32 *)(ro + pid_at) = pid;
		*(__u32 *)(ro + sink_at) = ring ? SINK_RING : SINK_PERF;
		*(bool *)(ro + wakeup_at) = nowakeup;
		if (bpf_map__set_initial_value(rodata, ro, sz)) {
			fprintf(stderr, "setting .rodata failed\n");
			return 1;
		}
		free(ro);
	}
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "load %s: %s\n", path, strerror(-err));
		return 1;
	}
	/* the .bss is mmapped once loaded: ring_full read in place */
	bss = bpf_object__find_map_by_name(obj, ".bss");
	bss_data = bss ? bpf_map__initial_value(bss, &bss_size) : NULL;
	ring_full_at = var_offset(obj, ".bss", "ring_full");
	if (!bss_data || ring_full_at < 0) {
		fprintf(stderr, "%s: no mmapped .bss with ring_full\n", path);
		return 1;
	}
	ring_full = (const volatile __u64 *)((const char *)bss_data + ring_full_at);
	if (ring)
		rb = ring_buffer__new(bpf_object__find_map_fd_by_name(obj, "events"), on_ring, NULL, NULL);
	else
		pb = perf_buffer__new(bpf_object__find_map_fd_by_name(obj, "perf_events"), 64, on_perf, on_perf_lost, NULL, NULL);
	if ((ring && !rb) || (!ring && !pb)) {
		fprintf(stderr, "buffer: %s\n", strerror(errno));
		return 1;
	}
	prog = bpf_object__find_program_by_name(obj, "handle_enter_getppid");
	link = bpf_program__attach(prog);
	if (!link) {
		fprintf(stderr, "attach: %s\n", strerror(errno));
		return 1;
	}
	cpu_at_ready = cpu_seconds();
	printf("ready\n");

	for (;;) {
		int n;

		if (nowakeup) {
			usleep(10000);
			n = ring_buffer__consume(rb);
		} else if (ring) {
			n = ring_buffer__poll(rb, 100);
		} else {
			n = perf_buffer__poll(pb, 100);
		}
		if (n < 0 && n != -EINTR) {
			fprintf(stderr, "poll: %s\n", strerror(-n));
			break;
		}
		mark();
		if (received != last_seen) {
			last_seen = received;
			last_ns = now_ns();
			quiet_since = last_ns;
		}
		if (finishing) {
			unsigned long long lost = ring ? *ring_full : perf_lost;

			if (received + lost >= (unsigned long long)n_expected)
				break;
			if (!quiet_since)
				quiet_since = now_ns();
			if (now_ns() - quiet_since > 500000000ULL)
				break;
		}
	}
	report(ring ? *ring_full : perf_lost); /* perf_errors counts the same drops as PERF_RECORD_LOST */
	bpf_link__destroy(link);
	ring_buffer__free(rb);
	perf_buffer__free(pb);
	bpf_object__close(obj);
	return 0;
}
