// Playwright Test configuration of a rubricrl PFT run (tasks/evaluation/pft.py writes the run's settings as
// JSON and names the file in RUBRICRL_PFT_RUN). It keeps the benchmark's own protocol (InteractScience's
// playwright_PFT.config.js: fully parallel, no retries, Desktop Chrome, Playwright's default 30 s test and
// 5 s expect limits) and changes only where the browser comes from: Debian's chromium-headless-shell with
// the sandbox's launch flags, started through the network-namespace wrapper when the machine allows one.
'use strict';
const fs = require('fs');
const { defineConfig, devices } = require('@playwright/test');

const run = JSON.parse(fs.readFileSync(process.env.RUBRICRL_PFT_RUN, 'utf8'));

module.exports = defineConfig({
  testDir: run.testDir,
  outputDir: run.outputDir,
  fullyParallel: true,
  workers: run.workers,
  retries: 0,
  reporter: [['json', { outputFile: run.report }], [require.resolve('./progress.js')]],
  use: { trace: 'off' },
  projects: [{
    name: 'chromium',
    use: { ...devices['Desktop Chrome'], launchOptions: { executablePath: run.executablePath, args: run.args } },
  }],
});
