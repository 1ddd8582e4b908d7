#!/usr/bin/env node
// The differential replay: the simulator (`duet-sim --engine-traces DIR`) wrote every Swift CallEngine's inputs
// and the outputs each produced, in the trace form both engines share. Here the browser engine
// (`js/engine/call-engine.js`) is made with the same options, fed the same inputs in the same order, and must
// produce the same outputs, step by step. The first divergence of a run is printed in full (run, engine, step,
// input, both outputs, where they first differ); any divergence exits 1.
//
// usage: node Tests/web/differential/replay.mjs TRACE_DIR [--js-root DIR] [--report FILE]
//   --js-root: the browser client's `js` folder to load (default: the one the server ships). The mutation
//              self-check points it at a copy with one change.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { spawnSync } from 'node:child_process';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const option = (name) => {
  const at = args.indexOf(name);
  if (at < 0) return null;
  const [value] = args.splice(at, 2).slice(1);
  return value;
};
const jsRoot = resolve(option('--js-root') ?? join(here, '../../../Sources/DuetWeb/Web/js'));
const reportPath = option('--report');
const directory = args[0];
if (!directory) {
  console.error('usage: replay.mjs TRACE_DIR [--js-root DIR] [--report FILE]');
  process.exit(2);
}

const { CallEngine } = await import(pathToFileURL(join(jsRoot, 'engine/call-engine.js')).href);

/** The commit and dirty flag by the one rule (Tests/e2e/results.py), and this run's id. */
function provenance() {
  const out = spawnSync('python3', [join(here, '../../e2e/results.py'), 'provenance'], { encoding: 'utf8' });
  const { commit, dirty } = out.status === 0 ? JSON.parse(out.stdout) : { commit: 'unknown', dirty: true };
  return { commit, dirty, runId: process.env.DUET_RUN_ID ?? null, finishedAt: new Date().toISOString() };
}

/** JSON with sorted keys: the form the Swift side wrote (JSONText sorts keys), so equal values print equal. */
function canonical(value) {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    const out = {};
    for (const key of Object.keys(value).sort()) if (value[key] !== undefined) out[key] = canonical(value[key]);
    return out;
  }
  return value;
}
const text = (value) => JSON.stringify(canonical(value));

/** The Swift options in the JS constructor's form (the jitter seed is a decimal string: a UInt64). */
function engineOptions(options) {
  return { ...options, jitterSeed: options.jitterSeed == null ? null : BigInt(options.jitterSeed) };
}

/** Where two output lists first differ: the index and both entries. */
function firstDifference(swift, js) {
  for (let i = 0; i < Math.max(swift.length, js.length); i += 1) {
    if (text(swift[i] ?? null) !== text(js[i] ?? null)) return { index: i, swift: swift[i] ?? '(none)', js: js[i] ?? '(none)' };
  }
  return null;
}

/** Replays one run's file; returns null or its first divergence. */
function replayRun(path) {
  const lines = readFileSync(path, 'utf8').split('\n').filter((line) => line.length > 0);
  let engine = null;
  let header = null;
  let step = 0;
  let steps = 0;
  for (const line of lines) {
    const record = JSON.parse(line);
    if (record.options !== undefined) {
      if (header != null && step !== header.steps) return { truncated: `${path}: engine ${header.engine} has ${step} of its ${header.steps} steps`, steps };
      header = record;
      engine = new CallEngine(engineOptions(record.options));
      step = 0;
      continue;
    }
    let js;
    try {
      js = engine.handle(structuredClone(record.input));
    } catch (error) {
      js = [{ type: 'thrown', error: String(error?.stack ?? error) }];
    }
    steps += 1;
    if (text(js) !== text(record.outputs)) {
      return { engine: header.engine, side: header.side, step, input: record.input, swift: record.outputs, js, difference: firstDifference(record.outputs, js), steps };
    }
    step += 1;
    if (step > header.steps) return { truncated: `${path}: engine ${header.engine} has more steps than its header says`, steps };
  }
  if (header != null && step !== header.steps) return { truncated: `${path}: engine ${header.engine} has ${step} of its ${header.steps} steps`, steps };
  return { steps };
}

const files = readdirSync(directory).filter((name) => name.endsWith('.jsonl')).sort();
if (files.length === 0) {
  console.error(`no traces in ${directory}`);
  process.exit(2);
}
const divergent = [];
let steps = 0;
for (const file of files) {
  const outcome = replayRun(join(directory, file));
  steps += outcome.steps;
  if (outcome.truncated) {
    console.error(`a trace is incomplete: ${outcome.truncated}`);
    process.exit(2);
  }
  if (outcome.input !== undefined) divergent.push({ run: file.replace(/\.jsonl$/, ''), ...outcome });
}

const seeds = files.filter((name) => name.startsWith('seed-')).length;
const duetCallSeeds = files.filter((name) => name.startsWith('duetcall-seed-')).length;
const scenarios = files.filter((name) => name.startsWith('scenario-')).length;
console.log(`differential replay: ${files.length} runs (${seeds} seeds, ${duetCallSeeds} seeds with one side as duet call, ${scenarios} named scenarios), ${steps} steps, ${divergent.length} diverging`);
if (reportPath) {
  writeFileSync(reportPath, JSON.stringify({ ...provenance(), runs: files.length, seeds, duetCallSeeds, scenarios, steps, diverging: divergent.map((d) => ({ run: d.run, engine: d.engine, side: d.side, step: d.step })) }, null, 2) + '\n');
}
if (divergent.length > 0) {
  const first = divergent[0];
  const pretty = (value) => JSON.stringify(canonical(value), null, 2).split('\n').map((line) => `    ${line}`).join('\n');
  console.log(`
FIRST DIVERGENCE
  run:    ${first.run}   (engine ${first.engine}, side ${first.side})
  step:   ${first.step}   (input #${first.step + 1} this engine was fed)
  input:
${pretty(first.input)}
  first differing output: #${first.difference.index}
    Swift: ${text(first.difference.swift)}
    JS:    ${text(first.difference.js)}
  Swift outputs:
${pretty(first.swift)}
  JS outputs:
${pretty(first.js)}
`);
  const others = divergent.slice(1, 20).map((d) => `  ${d.run} engine ${d.engine} step ${d.step} (${d.input.type})`);
  if (others.length) console.log(`other diverging runs:\n${others.join('\n')}${divergent.length > 20 ? `\n  … and ${divergent.length - 20} more` : ''}`);
  process.exit(1);
}
