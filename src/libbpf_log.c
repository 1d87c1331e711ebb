/* libbpf's print callback, in C because it receives a va_list: the message
 * is formatted here with vasprintf (any bytes, any length) and handed to
 * Rust as bytes, which decodes it lossily. Nothing here can panic. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*libbpf_print_fn_t)(int level, const char *fmt, va_list ap);
extern libbpf_print_fn_t libbpf_set_print(libbpf_print_fn_t fn);

/* src/libbpf_log.rs */
extern void node_libbpf_log_message(int level, const char *msg, size_t len);

#define LIBBPF_DEBUG 2

static int debug;

static int print(int level, const char *fmt, va_list ap)
{
	char *msg = NULL;
	int n;

	/* debug messages are many (every relocation): formatted only when wanted */
	if (level == LIBBPF_DEBUG && !debug)
		return 0;
	n = vasprintf(&msg, fmt, ap);
	if (n < 0)
		return 0;
	node_libbpf_log_message(level, msg, (size_t)n);
	free(msg);
	return n;
}

void node_libbpf_log_install(int with_debug)
{
	debug = with_debug;
	libbpf_set_print(print);
}
