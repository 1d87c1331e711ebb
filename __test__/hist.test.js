'use strict';
// lib/tools/hist.js prints histograms as bpftrace does.
const test = require('node:test');
const assert = require('node:assert');
const { log2Buckets, linearBuckets, formatHistogram, histogramJSON } = require('../lib/tools/hist');

test('log2 slots: [0], [1], [2, 4) ... [1K, 2K), trimmed to the slots in use', () => {
  /** @type {(number | bigint)[]} */
  const slots = [0, 3, 0, 6];
  slots[11] = 1n; // counts may be bigints, as maps give them
  const buckets = log2Buckets(slots);
  assert.deepStrictEqual(buckets[0], { low: 1, high: 2, count: 3 });
  assert.deepStrictEqual(buckets.at(-1), { low: 1024, high: 2048, count: 1 });
  assert.strictEqual(
    formatHistogram(buckets, { title: '@usecs', width: 6 }),
    [
      '@usecs:',
      '[1]                        3 |@@@   |',
      '[2, 4)                     0 |      |',
      '[4, 8)                     6 |@@@@@@|',
      '[8, 16)                    0 |      |',
      '[16, 32)                   0 |      |',
      '[32, 64)                   0 |      |',
      '[64, 128)                  0 |      |',
      '[128, 256)                 0 |      |',
      '[256, 512)                 0 |      |',
      '[512, 1K)                  0 |      |',
      '[1K, 2K)                   1 |@     |',
    ].join('\n'),
  );
  assert.deepStrictEqual(log2Buckets([]), []);
  assert.deepStrictEqual(log2Buckets(new Map([[0, 2n]])), [{ low: 0, high: 1, count: 2 }]);
});

test('linear slots, with open ends, and the JSON form', () => {
  const buckets = linearBuckets([1, 0, 2, 0, 0, 4], { min: 0, max: 40, step: 10 });
  assert.strictEqual(
    formatHistogram(buckets, { width: 4 }),
    ['(..., 0)                   1 |@   |', '[0, 10)                    0 |    |', '[10, 20)                   2 |@@  |', '[20, 30)                   0 |    |', '[30, 40)                   0 |    |', '[40, ...)                  4 |@@@@|'].join('\n'),
  );
  assert.deepStrictEqual(histogramJSON(buckets).buckets[0], { low: null, high: 0, count: 1 });
  assert.deepStrictEqual(histogramJSON(buckets).buckets.at(-1), { low: 40, high: null, count: 4 });
});
