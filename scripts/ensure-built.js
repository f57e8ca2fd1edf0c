#!/usr/bin/env node
// Builds dist/ when it is missing or older than the sources, so that `npm start` and `npm run admin`
// work straight after `npm install`. In the Docker image (no src/, no compiler) it does nothing.
const { existsSync, readdirSync, statSync, utimesSync } = require('node:fs');
const { join } = require('node:path');
const { execFileSync } = require('node:child_process');

const root = join(__dirname, '..');
const src = join(root, 'src');
const stamp = join(root, 'dist', 'main.js');
if (!existsSync(src)) process.exit(0);

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

const builtAt = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
if (builtAt >= newest(src)) process.exit(0);
process.stderr.write('Building livegoods (dist/ is missing or out of date)...\n');
execFileSync(process.execPath, [require.resolve('@nestjs/cli/bin/nest.js'), 'build'], { cwd: root, stdio: 'inherit' });
// The build is incremental: an unchanged dist/main.js keeps its old time, so mark the build as done now.
const now = new Date();
utimesSync(stamp, now, now);
