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

  // ---- the per-process timeline and the per-server lines (plain SVG) ----
  var SVG = 'http://www.w3.org/2000/svg';
  function svgEl(name, attrs, parent) {
    var e = document.createElementNS(SVG, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    if (parent) parent.appendChild(e);
    return e;
  }
  function total(a) { return a.reduce(function (s, v) { return s + v; }, 0); }
  // One row per process (or node), two strips: reads (blue) above writes
  // (red), each cell as dark as its bytes against the largest cell.
  function timeline(el, t) {
    if (!t.rows.length) { note(el, 'No process moved data.'); return; }
    var left = 150, cw = Math.max(2, Math.min(12, Math.floor(800 / Math.max(1, t.buckets)))), rh = 14;
    var W = left + cw * t.buckets + 10, H = 22 + rh * t.rows.length + 18;
    var top = 0;
    t.rows.forEach(function (r) { top = Math.max(top, A.peak([r.read, r.write])); });
    var svg = svgEl('svg', { 'class': 'tl', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H }, el);
    t.rows.forEach(function (r, i) {
      var y = 22 + i * rh;
      var g = svgEl('g', { 'data-row': r.name, 'data-read-bytes': Math.round(total(r.read)),
                           'data-write-bytes': Math.round(total(r.write)) }, svg);
      svgEl('text', { x: left - 6, y: y + rh - 3, 'text-anchor': 'end' }, g).textContent = r.name;
      [['read', r.read, '31,119,180', 0], ['write', r.write, '214,39,40', (rh - 2) / 2]].forEach(function (d) {
        d[1].forEach(function (v, k) {
          if (!v) return;
          var c = svgEl('rect', { 'class': 'cell', x: left + k * cw, y: y + d[3], width: cw, height: (rh - 2) / 2,
                                  fill: 'rgba(' + d[2] + ',' + (0.15 + 0.85 * v / top).toFixed(3) + ')' }, g);
          svgEl('title', {}, c).textContent = r.name + ' ' + d[0] + ' ' + human(v) + 'B in ' + t.bucket_s + ' s from ' +
            new Date((t.start_ns / 1e6) + k * t.bucket_s * 1000).toISOString().slice(11, 19) + ' UTC';
        });
      });
    });
    svgEl('text', { x: left, y: 14 }, svg).textContent = new Date(t.start_ns / 1e6).toISOString().slice(11, 19) + ' UTC';
    svgEl('text', { x: W - 10, y: 14, 'text-anchor': 'end' }, svg).textContent =
      '+' + (t.buckets * t.bucket_s) + ' s (' + t.bucket_s + ' s a column)';
    el.setAttribute('data-rows', String(t.rows.length));
    note(el, 'One row per ' + t.rows_by + (t.rows_by === 'node' ? ' (too many processes for one row each)' : '') +
         ': reads in blue above writes in red, darker for more bytes.' +
         (t.rows_omitted ? ' ' + t.rows_omitted + ' nodes moving the fewest bytes are left out.' : ''));
  }
  // The job's bytes/s through each server over time; lagging ones in red.
  function servers(el, t, lagging) {
    if (!t.servers.length) { note(el, 'No forwarding-node map and no job_stats for this job: no per-server data.'); return; }
    ['forwarding', 'ost'].forEach(function (kind) {
      var list = t.servers.filter(function (s) { return s.kind === kind; });
      if (!list.length) return;
      var left = 70, pw = 640, ph = 160, W = left + pw + 320, H = ph + 40;
      var rates = list.map(function (s) { return A.perSecond(s.bytes, t.bucket_s * 1e9); });
      var top = A.yRange(A.peak(rates))[1];
      var fig = document.createElement('figure');
      el.appendChild(fig);
      var svg = svgEl('svg', { 'class': 'srv', 'data-kind': kind, width: W, height: H, viewBox: '0 0 ' + W + ' ' + H }, fig);
      svgEl('line', { 'class': 'axis', x1: left, y1: 10 + ph, x2: left + pw, y2: 10 + ph }, svg);
      svgEl('line', { 'class': 'axis', x1: left, y1: 10, x2: left, y2: 10 + ph }, svg);
      svgEl('text', { x: left - 4, y: 10 + ph, 'text-anchor': 'end' }, svg).textContent = '0';
      svgEl('text', { x: left - 4, y: 18, 'text-anchor': 'end' }, svg).textContent = human(top) + 'B/s';
      svgEl('text', { x: left + pw, y: 26 + ph, 'text-anchor': 'end' }, svg).textContent = '+' + (t.buckets * t.bucket_s) + ' s';
      var order = list.map(function (s, i) { return i; });
      order.sort(function (a, b) { return (lagging[list[a].name] ? 1 : 0) - (lagging[list[b].name] ? 1 : 0); });
      order.forEach(function (i, n) {
        var s = list[i], lag = !!lagging[s.name];
        var pts = rates[i].map(function (v, k) {
          var x = left + (t.buckets > 1 ? pw * k / (t.buckets - 1) : pw / 2);
          return x.toFixed(1) + ',' + (10 + ph - ph * v / top).toFixed(1);
        }).join(' ');
        var line = svgEl('polyline', { points: pts, 'data-server': s.name, 'data-total': Math.round(total(s.bytes)),
                                       'data-active-s': s.active_s, 'class': lag ? 'lagging' : '' }, svg);
        svgEl('title', {}, line).textContent = s.name + ': ' + human(s.total_bytes) + 'B, busy ' + s.active_s + ' s' +
          (lag ? ' (lagging: ' + lagging[s.name] + ')' : '');
      });
      // The legend: lagging servers first, then the others by name.
      var ly = 14;
      list.slice().sort(function (a, b) { return (lagging[b.name] ? 1 : 0) - (lagging[a.name] ? 1 : 0); })
        .slice(0, 10).forEach(function (s) {
          var tx = svgEl('text', { x: left + pw + 10, y: ly, 'data-legend': s.name }, svg);
          tx.textContent = s.name + ' ' + human(s.total_bytes) + 'B, ' + s.active_s + ' s' + (lagging[s.name] ? ' LAGGING' : '');
          if (lagging[s.name]) tx.setAttribute('fill', '#d62728');
          ly += 14;
        });
      if (list.length > 10) svgEl('text', { x: left + pw + 10, y: ly }, svg).textContent = '... ' + (list.length - 10) + ' more';
      var cap = document.createElement('figcaption');
      cap.textContent = (kind === 'ost' ? 'OSTs (the job\'s job_stats bytes)' : 'Forwarding nodes (the job\'s traced bytes of the nodes behind each)') +
        ', bytes/s per ' + t.bucket_s + ' s.';
      fig.appendChild(cap);
    });
    el.setAttribute('data-servers', String(t.servers.length));
  }
  var timelines = {};
  function timelineOf(job, q) {
    if (!timelines[job + q]) timelines[job + q] = getJson(base + '/api/jobs/' + encodeURIComponent(job) + '/timeline' + q);
    return timelines[job + q];
  }
  document.querySelectorAll('div.timeline').forEach(function (el) {
    var job = el.getAttribute('data-job');
    work.push(timelineOf(job, query(el))
      .then(function (t) { timeline(el, t); })
      .catch(function (e) { note(el, 'No timeline: ' + e.message); }));
  });
  document.querySelectorAll('div.servers').forEach(function (el) {
    var job = el.getAttribute('data-job'), q = query(el);
    var an = getJson(base + '/api/jobs/' + encodeURIComponent(job) + '/anomaly' + q).catch(function () { return {}; });
    work.push(Promise.all([timelineOf(job, q), an])
      .then(function (v) {
        var lagging = {};
        ((v[1] || {}).server_outliers || []).forEach(function (o) {
          lagging[o.server] = 'bandwidth ' + Number(o.bandwidth_ratio).toFixed(2) + 'x its peers\', ' +
            Number(o.cost_s).toFixed(1) + ' s lost';
        });
        servers(el, v[0], lagging);
      })
      .catch(function (e) { note(el, 'No per-server data: ' + e.message); }));
  });
  Promise.all(work).then(function () {
    document.body.setAttribute('data-plots', String(plots));
    document.body.setAttribute('data-ready', '1');
  });
})();
