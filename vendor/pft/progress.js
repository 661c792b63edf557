// Progress of a rubricrl PFT run (tasks/evaluation/pft.py reads it from the runner's stdout as the run goes):
// at the start one line with each spec file's number of tests, then one line per finished test, each line
// "rubricrl-pft " and a JSON object. The JSON report (pft.config.js) stays the source of the verdicts.
'use strict';
const PREFIX = 'rubricrl-pft ';

class ProgressReporter {
  onBegin(config, suite) {
    const tests = {};
    for (const t of suite.allTests()) tests[t.location.file] = (tests[t.location.file] || 0) + 1;
    process.stdout.write(PREFIX + JSON.stringify({ begin: tests }) + '\n');
  }

  onTestEnd(test, result) {
    process.stdout.write(PREFIX + JSON.stringify({ file: test.location.file, passed: result.status === 'passed' }) + '\n');
  }

  printsToStdio() {
    return true;
  }
}

module.exports = ProgressReporter;
