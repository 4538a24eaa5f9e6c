// Unit test of serve/web/iosonar-axes.js (node, no browser): the chart
// defects of issue 34 -- a one-point chart spanning years, axes not from
// zero, a chart's peak that is not the summary's.
// usage: node test_axes.js PATH/TO/iosonar-axes.js
'use strict';
const assert = require('assert');
const A = require(process.argv[2]);

const GiB = 1024 ** 3;
// One bucket: the time axis spans exactly that second.
const t0 = 1795305600;
const xs1 = A.times(t0 * 1e9, 1e9, 1);
assert.deepStrictEqual(xs1, [t0]);
assert.deepStrictEqual(A.timeRange(xs1, 1e9), [t0, t0 + 1]);
// Twelve 5 s buckets: from the first start to the last end (60 s, not years).
const xs12 = A.times(t0 * 1e9, 5e9, 12);
const r12 = A.timeRange(xs12, 5e9);
assert.strictEqual(r12[1] - r12[0], 60);
assert.strictEqual(A.timeRange([], 1e9), null);
// Rate axes start at zero, also when every value is far from it.
assert.deepStrictEqual(A.yRange(100), [0, 110.00000000000001]);
assert.strictEqual(A.yRange(5 * GiB)[0], 0);
assert.deepStrictEqual(A.yRange(0), [0, 1]);
// Per-second rates of 5 s buckets, and their peak.
const w = A.perSecond([5 * GiB, 10 * GiB, 0], 5e9);
assert.deepStrictEqual(w, [GiB, 2 * GiB, 0]);
assert.strictEqual(A.peak([w, [null, 3, 1]]), 2 * GiB);
assert.strictEqual(A.peak([[], [null]]), 0);
console.log('iosonar-axes: all checks passed');
