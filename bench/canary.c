/* The startup row's canary: every millisecond, openat + read + write + close
 * of /dev/null (the 8 syscall tracepoints of bpf/file_io.bpf.c), until
 * killed. */
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
	struct timespec ms = { 0, 1000000 };
	char c;

	for (;;) {
		int fd = open("/dev/null", O_RDWR);

		if (fd >= 0) {
			if (read(fd, &c, 1) < 0 || write(fd, "x", 1) < 0)
				c = 0;
			close(fd);
		}
		nanosleep(&ms, NULL);
	}
}
