// Drives Debian's chromium (playwright-core, executablePath) against a running
// `iosonar serve`: each user's job page has its plots drawn with data, the
// other user's job is 404, a job name with HTML stays text (no script runs),
// and the administrator's heatmap is there. Screenshots go to OUT_DIR.
// usage: node check_pages.mjs BASE_URL OUT_DIR
import { chromium } from 'playwright-core';

const [base, out] = process.argv.slice(2);
const failures = [];
const fail = (m) => { failures.push(m); console.log('FAIL ' + m); };

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
         '--disable-component-update', '--no-first-run'],
});

async function asUser(user, fn) {
  const ctx = await browser.newContext({ extraHTTPHeaders: { 'X-Remote-User': user }, viewport: { width: 1200, height: 900 } });
  const page = await ctx.newPage();
  page.on('dialog', async (d) => { fail(`${user}: a dialog opened (script ran): ${d.message()}`); await d.dismiss(); });
  page.on('pageerror', (e) => fail(`${user}: page error ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') console.log(`${user} console: ${m.text()}`); });
  try { await fn(page); } finally { await ctx.close(); }
}

// Plots drawn with data: each chart div has a canvas with painted pixels and
// data points; returns how many.
async function plotsOf(page, what) {
  const charts = await page.$$eval('div.chart', (divs) => divs.map((d) => {
    const c = d.querySelector('canvas');
    let painted = 0;
    if (c) {
      const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      for (let i = 3; i < px.length; i += 4) if (px[i] !== 0) painted++;
    }
    return { kind: d.getAttribute('data-chart'), points: Number(d.getAttribute('data-points') || 0), painted };
  }));
  let plots = 0;
  for (const c of charts) {
    if (c.points > 0 && c.painted > 0) plots++;
    else fail(`${what}: chart ${c.kind} is empty (points ${c.points}, painted ${c.painted})`);
  }
  return plots;
}

async function checkJob(page, user, job, shot) {
  const resp = await page.goto(`${base}/jobs/${job}`);
  if (resp.status() !== 200) { fail(`${user} /jobs/${job}: status ${resp.status()}`); return; }
  await page.waitForSelector('body[data-ready="1"]', { timeout: 60000 });
  const plots = await plotsOf(page, `${user} /jobs/${job}`);
  const phases = await page.$$eval('div.phases tr', (rows) => rows.length);
  if (phases < 2) fail(`${user} /jobs/${job}: no phase rows`);
  console.log(`${user} /jobs/${job}: plots ${plots}, phase rows ${phases - 1}`);
  if (shot) await page.screenshot({ path: `${out}/${shot}`, fullPage: true });
}

await asUser('daemon', async (page) => {
  await checkJob(page, 'daemon', '101', 'job-101.png');
  const name = await page.$eval('h1 .name', (e) => e.textContent);
  if (name !== '<script>alert(1)</script>') fail(`daemon: the job name shows as '${name}'`);
  const other = await page.goto(`${base}/jobs/102`);
  if (other.status() !== 404) fail(`daemon /jobs/102: status ${other.status()}, not 404`);
  const otherCluster = await page.goto(`${base}/jobs/104?cluster=beta`);
  if (otherCluster.status() !== 404) fail(`daemon /jobs/104?cluster=beta: status ${otherCluster.status()}, not 404`);
  const list = await page.goto(`${base}/jobs`);
  const text = await page.textContent('table.jobs');
  if (list.status() !== 200 || !text.includes('101') || text.includes('bins-app')) fail('daemon /jobs: wrong list');
  await page.screenshot({ path: `${out}/jobs.png`, fullPage: true });
});
await asUser('bin', async (page) => {
  await checkJob(page, 'bin', '102', 'job-102.png');
  await checkJob(page, 'bin', '104?cluster=beta', 'job-104-beta.png');  // another cluster's job
  const other = await page.goto(`${base}/jobs/101`);
  if (other.status() !== 404) fail(`bin /jobs/101: status ${other.status()}, not 404`);
});
await asUser('root', async (page) => {
  const resp = await page.goto(`${base}/admin?day=2026-11-22&job=101`);
  if (resp.status() !== 200) fail(`root /admin: status ${resp.status()}`);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 60000 });
  const cells = await page.$$eval('svg.heatmap rect', (r) => r.length);
  if (cells < 24) fail(`root /admin: heatmap has ${cells} cells`);
  const plots = await plotsOf(page, 'root /admin');
  console.log(`root /admin: heatmap cells ${cells}, plots ${plots}`);
  const lassiBase = await page.$eval('#lassi-baseline', (e) => e.textContent).catch(() => null);
  console.log(`root /admin: ${lassiBase}`);
  await page.screenshot({ path: `${out}/admin-heatmap.png`, fullPage: true });
  await checkJob(page, 'root', '102', null);
});
await browser.close();
console.log(failures.length ? `${failures.length} failures` : 'ok');
process.exit(failures.length ? 1 : 0);
