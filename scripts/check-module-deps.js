#!/usr/bin/env node
// Checks that the dependencies between the folders of src/ (one per domain) point one way: prints the
// folder graph and fails when two folders import each other, directly or through others.
// `npm run deps` runs it and madge (no file-level cycles either).
const fs = require('node:fs');
const path = require('node:path');

const SRC = path.join(__dirname, '..', 'src');
/** Top-level folder of a file under src/ ('.' for files directly in src/). */
const folderOf = (file) => {
  const rel = path.relative(SRC, file).split(path.sep);
  return rel.length > 1 ? rel[0] : '.';
};

function* tsFiles(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* tsFiles(full);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts')) yield full;
  }
}

const edges = new Map(); // folder -> Map(folder -> example "file -> import")
for (const file of tsFiles(SRC)) {
  const text = fs.readFileSync(file, 'utf8');
  for (const match of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/g)) {
    const target = path.resolve(path.dirname(file), match[1]);
    if (!target.startsWith(SRC)) continue;
    const from = folderOf(file);
    const to = folderOf(target);
    if (from === to || from === '.') continue; // src/*.ts (app module, schema, main) wire everything
    if (!edges.has(from)) edges.set(from, new Map());
    if (!edges.get(from).has(to)) edges.get(from).set(to, `${path.relative(SRC, file)} -> ${match[1]}`);
  }
}

// Strongly connected components (Tarjan): a component of more than one folder is a cycle.
const index = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
const cycles = [];
let counter = 0;
function visit(v) {
  index.set(v, counter);
  low.set(v, counter);
  counter += 1;
  stack.push(v);
  onStack.add(v);
  for (const w of edges.get(v)?.keys() ?? []) {
    if (!index.has(w)) {
      visit(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
  }
  if (low.get(v) === index.get(v)) {
    const component = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) cycles.push(component.sort());
  }
}
const folders = [...new Set([...edges.keys(), ...[...edges.values()].flatMap((m) => [...m.keys()])])].sort();
for (const f of folders) if (!index.has(f)) visit(f);

for (const f of folders) {
  const to = [...(edges.get(f)?.keys() ?? [])].sort();
  if (to.length) console.log(`${f} -> ${to.join(', ')}`);
}
if (cycles.length) {
  console.error('\nFolders of src/ that depend on each other:');
  for (const cycle of cycles) {
    console.error(`  ${cycle.join(' <-> ')}`);
    for (const a of cycle) for (const b of cycle) if (edges.get(a)?.has(b)) console.error(`    ${edges.get(a).get(b)}`);
  }
  process.exit(1);
}
console.log(`\n${folders.length} folders, no cycle between them.`);
