// The `@playwright/test` a benchmark's spec imports when rubricrl runs it (tasks/evaluation/pft.py links this
// folder as node_modules/@playwright/test of the run, so the spec's own text stays unchanged): the real
// Playwright Test, whose `context` fixture sends every request of the test's pages through the sandbox.
//
// - file:, data: and blob: URLs load as in the benchmark's own run (the app is a local file);
// - any other URL is asked of the CDN mirror (a loopback server answering from tasks/env/cdn.py, address in
//   RUBRICRL_PFT_MIRROR): an allowlisted library is served from the pinned local copy, everything else is aborted;
// - WebSockets are closed.
// Each refused request is recorded on the test as an annotation: `rubricrl-unserved` (a library the page loads
// that the mirror lacks: the benchmark's own run would have had it, so the environment cannot judge the test) or
// `rubricrl-blocked` (any other request the sandbox never lets out). The mirror server decides which.
'use strict';
const real = require('../node_modules/@playwright/test');

const MIRROR = process.env.RUBRICRL_PFT_MIRROR;
if (!MIRROR) {
  throw new Error('RUBRICRL_PFT_MIRROR is not set: run benchmark specs through tasks/evaluation/pft.py (run_pft)');
}
const LOCAL = /^(file|data|blob):/;

async function answer(route, testInfo) {
  const url = route.request().url();
  if (LOCAL.test(url)) {
    return route.continue();
  }
  let res = null;
  try {
    const type = encodeURIComponent(route.request().resourceType());
    res = await fetch(`${MIRROR}/resolve?url=${encodeURIComponent(url)}&type=${type}`);
  } catch (e) {
    res = null; // the mirror is gone: the request stays refused, and says so
  }
  if (res && res.status === 200) {
    const body = Buffer.from(await res.arrayBuffer());
    return route.fulfill({
      status: 200, body,
      headers: { 'content-type': res.headers.get('content-type') || 'application/octet-stream',
                 'access-control-allow-origin': '*' },
    });
  }
  if (res && res.status === 404 && res.headers.get('x-rubricrl-not-found')) {
    // the real CDN has no such file either: the page gets its 404, as in the benchmark's own run
    return route.fulfill({ status: 404, body: 'Not Found', headers: { 'access-control-allow-origin': '*' } });
  }
  const kind = (res && res.headers.get('x-rubricrl-refused')) || 'unserved';
  testInfo.annotations.push({ type: `rubricrl-${kind}`, description: url.slice(0, 500) });
  return route.abort('blockedbyclient');
}

const test = real.test.extend({
  context: async ({ context }, use, testInfo) => {
    await context.route('**/*', (route) => answer(route, testInfo));
    await context.routeWebSocket(/.*/, (ws) => {
      testInfo.annotations.push({ type: 'rubricrl-blocked', description: ws.url().slice(0, 500) });
      return ws.close({ code: 1008, reason: 'network blocked by the rubricrl sandbox' });
    });
    await use(context);
  },
});

module.exports = { ...real, test };
