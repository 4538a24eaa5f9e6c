// Drives Debian's chromium (playwright-core, executablePath) to the
// administrator's page of one day of `iosonar serve` and prints what its
// probe-slowdown section says about the baseline, as the page shows it:
//   baseline: TEXT
//   warning: TEXT   (only when the page shows a warning)
//   rows: N
// usage: node check_slowdown.mjs BASE_URL DAY USER
import { chromium } from 'playwright-core';

const [base, day, user] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
         '--disable-component-update', '--no-first-run'],
});
let rc = 0;
try {
  const ctx = await browser.newContext({ extraHTTPHeaders: { 'X-Remote-User': user } });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => { console.log('page error ' + e.message); rc = 1; });
  const resp = await page.goto(`${base}/admin?day=${day}`);
  if (resp.status() !== 200) { console.log(`status ${resp.status()}`); rc = 1; }
  await page.waitForSelector('body[data-ready="1"]', { timeout: 120000 });
  const text = (sel) => page.$eval(sel, (e) => e.textContent).catch(() => null);
  const used = await text('div.slowdown #slowdown-baseline');
  const warn = await text('div.slowdown #slowdown-baseline-warning');
  console.log('baseline: ' + used);
  if (warn !== null) console.log('warning: ' + warn);
  console.log('rows: ' + await page.$$eval('div.slowdown tr', (r) => Math.max(0, r.length - 1)));
  await ctx.close();
} finally {
  await browser.close();
}
process.exit(rc);
