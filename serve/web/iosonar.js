// iosonar serve: draws the charts of a page from the JSON API (same origin;
// nothing inline, nothing from elsewhere) with uPlot, and fills the phase
// table. Text from the API goes in with textContent, never as HTML.
(function () {
  'use strict';
  var colors = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];
  var plots = 0;
  // The path the service is mounted under (--base-path): where this script came from.
  var me = document.currentScript;
  var base = me ? new URL(me.src, location.href).pathname.replace(/\/static\/iosonar\.js$/, '') : '';

  function human(v) {
    var u = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi'], i = 0;
    v = Math.abs(v);
    while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return (i ? v.toFixed(1) : v.toFixed(0)) + ' ' + u[i];
  }
  function getJson(url) {
    return fetch(url, { credentials: 'same-origin' }).then(function (r) {
      if (!r.ok) throw new Error(r.status === 404 ? 'no data' : 'HTTP ' + r.status);
      return r.json();
    });
  }
  function note(el, text) {
    var p = document.createElement('p');
    p.className = 'note';
    p.textContent = text;
    el.appendChild(p);
  }
  var A = window.IosonarAxes;
  // series: [{label, y: [...]}]; xs: seconds (time axis) or indices.
  // xrange: the time axis' [from, to] (A.timeRange: one point spans its
  // bucket, not years); names: category labels of a bar chart. Every value
  // axis starts at zero.
  function draw(el, title, xs, series, unit, time, bars, names, xrange) {
    var nonzero = 0;
    series.forEach(function (s) { s.y.forEach(function (v) { if (v) nonzero++; }); });
    var width = Math.max(400, Math.min(el.clientWidth || 900, 1100));
    var y = { range: function (u, min, max) { return A.yRange(max); } };
    var opts = {
      title: title, width: width, height: 260,
      scales: names ? { x: { time: false, range: [-0.5, names.length - 0.5] }, y: y }
                    : { x: xrange ? { time: time, range: xrange } : { time: time }, y: y },
      series: [{ label: time ? 'time (UTC)' : 'index' }].concat(series.map(function (s, i) {
        var o = { label: s.label, stroke: colors[i % colors.length], width: 1.5,
                  value: function (u, v) { return v == null ? '-' : human(v) + unit; } };
        if (s.dash) o.dash = [6, 4];
        if (bars) { o.fill = i ? '#d62728' : '#c7d7ea'; o.stroke = i ? '#d62728' : '#7f9fc4'; o.paths = uPlot.paths.bars({ size: [0.7, 40] }); }
        return o;
      })),
      axes: [names ? { values: function (u, vals) { return vals.map(function (v) { return names[v] || ''; }); } } : {},
             { size: 96, values: function (u, vals) { return vals.map(function (v) { return human(v) + unit; }); } }],
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'); }
    };
    new uPlot(opts, [xs].concat(series.map(function (s) { return s.y; })), el);
    el.setAttribute('data-points', String(nonzero));
    el.setAttribute('data-y-min', String(A.yRange(A.peak(series.map(function (s) { return s.y; })))[0]));
    if (xrange) el.setAttribute('data-x-span', String(xrange[1] - xrange[0]));
    plots++;
  }
  function sum(a, b) { return a.map(function (v, i) { return v + b[i]; }); }
  function layersChart(el, view, kind) {
    var s = view.series, c = s.client;
    var xs = A.times(c.start_ns, c.bucket_ns, c.read_bytes.length);
    var xrange = A.timeRange(xs, c.bucket_ns);
    if (kind === 'bandwidth') {
      // The job's reads and writes apart: their peaks are the summary's.
      var rd = A.perSecond(c.read_bytes, c.bucket_ns), wr = A.perSecond(c.write_bytes, c.bucket_ns);
      el.setAttribute('data-peak-read', String(Math.round(A.peak([rd]))));
      el.setAttribute('data-peak-write', String(Math.round(A.peak([wr]))));
      draw(el, 'Bandwidth per second (' + c.bucket_ns / 1e9 + ' s buckets)', xs, [
        { label: 'client read (job traces)', y: rd },
        { label: 'client write (job traces)', y: wr },
        { label: 'forwarding nodes (Lustre clients, all jobs)', y: A.perSecond(sum(s.forwarding.read_bytes, s.forwarding.write_bytes), s.forwarding.bucket_ns), dash: true },
        { label: 'OSTs (all jobs)', y: A.perSecond(sum(s.ost.read_bytes, s.ost.write_bytes), s.ost.bucket_ns), dash: true }],
        'B/s', true, false, null, xrange);
    } else {
      draw(el, 'Metadata operations per second', xs, [
        { label: 'client (job traces)', y: A.perSecond(c.meta_ops, c.bucket_ns) },
        { label: 'forwarding nodes', y: A.perSecond(s.forwarding.meta_ops, s.forwarding.bucket_ns) },
        { label: 'MDTs', y: A.perSecond(s.mdt.meta_ops, s.mdt.bucket_ns) }], 'op/s', true, false, null, xrange);
    }
  }
  function ostChart(el, view) {
    var osts = view.osts || [];
    if (!osts.length) { note(el, 'No OST data for this job.'); return; }
    var secs = Math.max(1, view.series.client.read_bytes.length * view.series.client.bucket_ns / 1e9);
    var xs = osts.map(function (_, i) { return i; });
    draw(el, 'Bandwidth per OST over the job\'s window: the job in front of all traffic', xs, [
      { label: 'all jobs', y: osts.map(function (o) { return o.total_bytes / secs; }) },
      { label: 'this job', y: osts.map(function (o) { return o.job_bytes / secs; }) }], 'B/s', false, true,
      osts.map(function (o) { return o.server; }));
  }
  // LASSi: risk_oss and risk_mds of each file system's windows over the day.
  function lassiChart(el, d) {
    var rows = d.lassi.fs_windows || [];
    if (!rows.length) { note(el, 'No OST/MDT records this day.'); return; }
    var times = [], byFs = {};
    rows.forEach(function (r) {
      var t = Date.parse(r.start) / 1000;
      if (times.indexOf(t) < 0) times.push(t);
      (byFs[r.fs] = byFs[r.fs] || {})[t] = r;
    });
    times.sort(function (a, b) { return a - b; });
    var series = [];
    Object.keys(byFs).sort().forEach(function (fs) {
      ['risk_oss', 'risk_mds'].forEach(function (k) {
        series.push({ label: fs + ' ' + k, y: times.map(function (t) { return byFs[fs][t] ? byFs[fs][t][k] : null; }) });
      });
    });
    var day0 = Date.parse(d.day + 'T00:00:00Z') / 1000;
    draw(el, 'LASSi risk per ' + d.window_s + ' s window', times, series, '', true, false, null, [day0, day0 + 86400]);
    el.setAttribute('data-points', String(times.length * series.length));
    // Which avg_fs: a stored baseline (by name), else the fallback's range.
    var b = d.lassi.baseline || {};
    var used = document.createElement('p');
    used.className = 'note';
    used.id = 'lassi-baseline';
    used.textContent = 'LASSi baseline (avg_fs): ' + (b.fallback
      ? 'no stored baseline with ' + d.window_s + ' s windows; averages of ' + b.from + ' to ' + b.to
      : 'stored baseline ' + b.name + ' (' + b.source + ', ' + b.from + ' to ' + b.to + ')') + '.';
    el.appendChild(used);
  }
  function slowdown(el, d) {
    // Which t_expected: the stored probe baseline, else the 30 days before (said loudly).
    var used = document.createElement('p');
    used.className = 'note';
    used.id = 'slowdown-baseline';
    used.textContent = 'Baseline median (t_expected): ' + (d.slowdown.baseline_description || d.slowdown.baseline) + '.';
    el.appendChild(used);
    if (d.slowdown.baseline_warning) {
      var w = document.createElement('p'), b = document.createElement('b');
      w.className = 'warn';
      w.id = 'slowdown-baseline-warning';
      b.textContent = 'WARNING:';
      w.appendChild(b);
      w.appendChild(document.createTextNode(' ' + d.slowdown.baseline_warning));
      el.appendChild(w);
    }
    var rows = (d.slowdown.rows || []).filter(function (r) { return r.slowdown_median != null; });
    if (!rows.length) { note(el, 'No probe slowdown this day (no probe samples with a baseline).'); return; }
    rows.sort(function (a, b) { return b.slowdown_median - a.slowdown_median; });
    var t = document.createElement('table');
    var head = t.insertRow();
    ['File system', 'Op', 'Interval', 'Start (UTC)', 'Samples', 'Slowdown (median)', 'Slowdown (p99)'].forEach(function (h) {
      var th = document.createElement('th'); th.textContent = h; head.appendChild(th);
    });
    rows.slice(0, 20).forEach(function (r) {
      var row = t.insertRow();
      [r.fs, r.op, r.interval_s + ' s', r.start, String(r.count), r.slowdown_median.toFixed(2) + 'x',
       r.slowdown_p99 == null ? '-' : r.slowdown_p99.toFixed(2) + 'x'].forEach(function (v) { row.insertCell().textContent = v; });
    });
    el.appendChild(t);
  }
  function phases(el, p) {
    if (!p.phases.length) { note(el, 'No I/O phases found.'); return; }
    var t = document.createElement('table');
    var head = t.insertRow();
    ['Direction', 'Start (UTC)', 'Duration', 'Bytes', 'Mean', 'Peak'].forEach(function (h) {
      var th = document.createElement('th'); th.textContent = h; head.appendChild(th);
    });
    p.phases.forEach(function (ph) {
      var r = t.insertRow();
      [ph.direction, ph.start, ph.duration_s + ' s', human(ph.bytes) + 'B', human(ph.bw_mean) + 'B/s',
       human(ph.bw_peak) + 'B/s'].forEach(function (v) { r.insertCell().textContent = v; });
    });
    el.appendChild(t);
  }

  var jobs = {}, work = [];
  // "?cluster=NAME" when the job is on another cluster than the service's default.
  function query(el) {
    var q = el.getAttribute('data-query') || '';
    return q.indexOf('?cluster=') === 0 ? '?cluster=' + encodeURIComponent(q.slice(9)) : '';
  }
  function view(job, q) {
    if (!jobs[job + q]) jobs[job + q] = getJson(base + '/api/jobs/' + encodeURIComponent(job) + '/series' + q);
    return jobs[job + q];
  }
  var days = {};
  function lassi(day) {
    if (!days[day]) days[day] = getJson(base + '/api/admin/lassi?day=' + encodeURIComponent(day));
    return days[day];
  }
  document.querySelectorAll('div.slowdown').forEach(function (el) {
    work.push(lassi(el.getAttribute('data-day')).then(function (d) { slowdown(el, d); })
      .catch(function (e) { note(el, 'No slowdown: ' + e.message); }));
  });
  document.querySelectorAll('div.chart').forEach(function (el) {
    var job = el.getAttribute('data-job'), kind = el.getAttribute('data-chart');
    if (kind === 'lassi') {
      work.push(lassi(el.getAttribute('data-day')).then(function (d) { lassiChart(el, d); })
        .catch(function (e) { note(el, 'No chart: ' + e.message); }));
      return;
    }
    var src = kind === 'osts' ? getJson(base + '/api/admin/jobs/' + encodeURIComponent(job) + '/osts' + query(el))
                              : view(job, query(el));
    work.push(src.then(function (v) { kind === 'osts' ? ostChart(el, v) : layersChart(el, v, kind); })
      .catch(function (e) { note(el, 'No chart: ' + e.message); }));
  });
  document.querySelectorAll('div.phases').forEach(function (el) {
    work.push(getJson(base + '/api/jobs/' + encodeURIComponent(el.getAttribute('data-job')) + '/phases' + query(el))
      .then(function (p) { phases(el, p); })
      .catch(function (e) { note(el, 'No phases: ' + e.message); }));
  });
  Promise.all(work).then(function () {
    document.body.setAttribute('data-plots', String(plots));
    document.body.setAttribute('data-ready', '1');
  });
})();
