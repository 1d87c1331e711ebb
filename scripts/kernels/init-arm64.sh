#!/bin/sh
# /init of the arm64 test VM (scripts/kernels/arm64.js), busybox sh: mounts
# what the library and the tests use, prints what the VM is (node, kernel,
# BTF), runs the test files of /etc/node-libbpf-tests.conf one at a time
# (each under `timeout`, FILE_TIMEOUT_S), sums node's TAP counts into one
# NODE_LIBBPF_RESULT line, and powers off.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TMPDIR=/tmp LANG=C.UTF-8

mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mount -t bpf bpf /sys/fs/bpf
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
ip link set lo up
hostname node-libbpf-arm64

. /etc/node-libbpf-tests.conf

finish() {
	echo "NODE_LIBBPF_RESULT release=$(uname -r) $*"
	sync
	poweroff -f
	sleep 10
}

echo "NODE_LIBBPF_BOOTED release=$(uname -r) uptime=$(cut -d' ' -f1 /proc/uptime)"
cd "$REPO" || finish "error=no-repo"

# the smoke test: node runs, the kernel has BTF, bpffs and tracefs are there
node -e '
const fs = require("node:fs");
const os = require("node:os");
const facts = {
  node: process.version,
  arch: process.arch,
  kernel: os.release(),
  machine: os.machine ? os.machine() : "",
  btf: fs.existsSync("/sys/kernel/btf/vmlinux") ? fs.statSync("/sys/kernel/btf/vmlinux").size : 0,
  bpffs: fs.readFileSync("/proc/mounts", "utf8").includes(" /sys/fs/bpf bpf "),
  tracefs: fs.existsSync("/sys/kernel/tracing/events/syscalls/sys_enter_getppid"),
};
console.log("NODE_LIBBPF_SMOKE " + JSON.stringify(facts));
' || echo "NODE_LIBBPF_SMOKE {\"error\":\"node did not run\"}"

# the arm64 objects, loaded by bpftool (no addon needed): CO-RE relocation
# and the verifier of this kernel, program by program
ok=0
bad=0
old=0
for o in "$REPO"/bpf/arm64/*.bpf.o "$REPO"/__test__/bpf/arm64/*.bpf.o; do
	[ -f "$o" ] || continue
	d="/sys/fs/bpf/load_$(basename "$o" .bpf.o)"
	if bpftool prog loadall "$o" "$d" > /tmp/load.txt 2>&1; then
		ok=$((ok + 1))
	elif grep -q 'failed to guess program type from ELF section' /tmp/load.txt; then
		# Debian 12's bpftool links libbpf 1.1, which predates some SEC() names (uprobe.multi)
		old=$((old + 1))
		echo "NODE_LIBBPF_LOADSKIP ${o#"$REPO"/}: $(grep 'failed to guess' /tmp/load.txt | head -n 1)"
	else
		bad=$((bad + 1))
		echo "NODE_LIBBPF_LOADFAIL ${o#"$REPO"/}: $(grep -v -e 'strict mode' -e '^-- END' -e '^processed ' /tmp/load.txt | grep -e 'libbpf: prog' -e 'libbpf: failed' -e 'Error' -e '^R[0-9]' -e 'invalid' -e 'unbounded' | tail -n 4 | tr '\n' ' ')"
	fi
	rm -rf "$d"
done
echo "NODE_LIBBPF_LOADS ok=$ok failed=$bad unknown_to_bpftool=$old"

if [ "$HAS_ADDON" != 1 ]; then
	finish "exit=0 addon=missing"
fi

: > /tmp/tap.txt
rc=0
for f in $TEST_FILES; do
	echo "# file: $f"
	# vm-skips.js: what cannot run under TCG; arm64-skips.js: what cannot run on this VM's arm64 userland
	# (--test-force-exit: a file that leaves a child process behind still ends)
	timeout "$FILE_TIMEOUT_S" node --require "$REPO/scripts/kernels/vm-skips.js" --require "$REPO/scripts/kernels/arm64-skips.js" \
		--test --test-force-exit --test-reporter=tap "$f" > /tmp/file.txt 2>&1
	code=$?
	cat /tmp/file.txt
	cat /tmp/file.txt >> /tmp/tap.txt
	if [ "$code" = 143 ] || [ "$code" = 124 ]; then
		echo "not ok - $f # timed out after $FILE_TIMEOUT_S s"
		echo "# fail 1" >> /tmp/tap.txt
	fi
	[ "$code" = 0 ] || rc=$code
done
# each file ends with its own '# pass N' ... lines: the sums
sum() { sed -n "s/^# $1 \([0-9]*\)$/\1/p" /tmp/tap.txt | awk '{ s += $1 } END { print s + 0 }'; }
finish "exit=$rc pass=$(sum pass) fail=$(sum fail) cancelled=$(sum cancelled) skipped=$(sum skipped) todo=$(sum todo) uptime=$(cut -d' ' -f1 /proc/uptime)"
