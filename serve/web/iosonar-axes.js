// iosonar serve: the series and axis arithmetic of the charts, apart from the
// page so that it can be tested without a browser (test/web/test_axes.js).
//  - A time axis spans the buckets drawn: from the first bucket's start to the
//    last bucket's end, so one point spans its one bucket (uPlot alone would
//    widen a single point's range to years).
//  - Rate axes start at zero.
//  - A chart's peak is its largest per-second value, as the page's summary
//    names it ("largest 1 s bucket"), per direction.
(function (root) {
  'use strict';
  var A = {};
  // Bytes (or ops) per bucket into per-second rates.
  A.perSecond = function (values, bucketNs) {
    var b = bucketNs / 1e9;
    return values.map(function (v) { return v / b; });
  };
  // Bucket start times in seconds.
  A.times = function (startNs, bucketNs, n) {
    var xs = [];
    for (var i = 0; i < n; i++) xs.push((startNs + i * bucketNs) / 1e9);
    return xs;
  };
  // [first bucket start, last bucket end] in seconds; null without points.
  A.timeRange = function (xs, bucketNs) {
    if (!xs.length) return null;
    return [xs[0], xs[xs.length - 1] + bucketNs / 1e9];
  };
  // [0, a little over the largest value]; [0, 1] when everything is 0.
  A.yRange = function (max) {
    return [0, max > 0 ? max * 1.1 : 1];
  };
  // The largest value of several series (nulls skipped).
  A.peak = function (series) {
    var m = 0;
    series.forEach(function (ys) { ys.forEach(function (v) { if (v != null && v > m) m = v; }); });
    return m;
  };
  if (typeof module !== 'undefined' && module.exports) module.exports = A;
  else root.IosonarAxes = A;
})(this);
