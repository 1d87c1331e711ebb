'use strict';
// bpf/hist.bpf.h's loop-free log2_slot (libbpf-tools' bits.bpf.h form)
// puts every value in the slot the 64-step loop it replaced did: slot 0 for
// 0, slot k for [2^(k-1), 2^k). Compiled for the host with gcc (the same C);
// the BPF objects that use it are checked by hist, syscall_hist and monitor
// tests.
const test = require('node:test');
const assert = require('node:assert');
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

function compiler() {
  for (const cc of ['gcc', 'cc', 'clang']) {
    try {
      execFileSync(cc, ['--version'], { stdio: 'ignore' });
      return cc;
    } catch {
      // try the next
    }
  }
  return undefined;
}

const cc = compiler();

test('log2_slot: edge values are their bit length, and random values agree with the old loop', { skip: !cc && 'no C compiler (gcc, cc, clang) to build __test__/fixtures/log2_slots.c' }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'log2-'));
  try {
    const exe = path.join(dir, 'log2_slots');
    execFileSync(cc, ['-O2', '-Wall', '-Werror', '-o', exe, path.join(__dirname, 'fixtures', 'log2_slots.c')]);
    const lines = execFileSync(exe, { encoding: 'utf8' }).trim().split('\n');
    const summary = lines.pop();
    // 0, 2^k - 1, 2^k, 2^k + 1 for k in 0..63, UINT64_MAX
    assert.strictEqual(lines.length, 1 + 64 * 3 + 1);
    for (const line of lines) {
      const [v, slot] = line.split(' ');
      assert.strictEqual(Number(slot), BigInt(v).toString(2).length - (v === '0' ? 1 : 0), `log2_slot(${v})`);
    }
    assert.deepStrictEqual(lines.slice(0, 4), ['0 0', '0 0', '1 1', '2 2']);
    assert.strictEqual(lines.at(-1), '18446744073709551615 64');
    assert.strictEqual(summary, 'checked 1000000 mismatches 0');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
