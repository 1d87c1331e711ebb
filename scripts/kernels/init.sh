#!/bin/sh
# /init of the test VM's initramfs (busybox sh): mounts what the library and
# the tests use, runs the test files named in /etc/node-libbpf-tests.conf
# with node's TAP reporter (streamed to the serial console), prints one
# NODE_LIBBPF_RESULT line for scripts/test-kernels.js, and powers off.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TMPDIR=/tmp LANG=C.UTF-8
# the tests that measure what TCG's timing can change read it (buffers.test.js)
export NODE_LIBBPF_QEMU_TCG=1

mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mount -t bpf bpf /sys/fs/bpf
# cgroup v2 (cgroup.test.js: the tools' --cgroup and --per-container)
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
ip link set lo up
hostname node-libbpf-vm
# loop and vfat (scripts/kernels/fetch.js MODULES): cachestat's test mounts
# a disk image, to have a page cache in front of a block device
modules=/lib/modules/$(uname -r)
if [ -f "$modules/order" ]; then
	while read -r m; do insmod "$modules/$m" || echo "insmod $m failed"; done <"$modules/order"
fi

. /etc/node-libbpf-tests.conf

finish() {
	echo "NODE_LIBBPF_RESULT release=$(uname -r) $*"
	sync
	poweroff -f
	sleep 10
}

echo "NODE_LIBBPF_BOOTED release=$(uname -r) uptime=$(cut -d' ' -f1 /proc/uptime)"
cd "$REPO" || finish "error=no-repo"

set -o pipefail
# vm-skips.js: the tests that cannot run under TCG skip, saying why;
# $TEST_FLAGS: a file that leaves a child behind or hangs ends, and fails,
# instead of holding the VM until the host kills it
# shellcheck disable=SC2086
node --require "$REPO/scripts/kernels/vm-skips.js" --test --test-concurrency=1 $TEST_FLAGS --test-reporter=tap $TEST_FILES 2>&1 | tee /tmp/tap.txt
rc=$?
count() { sed -n "s/^# $1 \([0-9]*\)$/\1/p" /tmp/tap.txt | tail -n 1; }
finish "exit=$rc pass=$(count pass) fail=$(count fail) cancelled=$(count cancelled) skipped=$(count skipped) todo=$(count todo) uptime=$(cut -d' ' -f1 /proc/uptime)"
