// `minfer serve` takes the observability flags every model-running command takes: a trace line
// per scheduler step (--trace), the per-op profile on stderr at exit (--profile) and the prefill
// and decode graphs (--dump-graph), as `minfer run` does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startServer, postJson, skipReason } from './helpers.js';

test('serve writes a trace, a graph dump and a profile', { skip: skipReason }, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'minfer-observe-'));
  try {
    const trace = path.join(dir, 'trace.jsonl');
    const graphs = path.join(dir, 'graphs.json');
    const server = await startServer(['--trace', trace, '--profile', '--dump-graph', graphs]);
    const r = await postJson(`${server.url}/v1/completions`, {
      prompt: 'Hello there', max_tokens: 4, temperature: 0,
    });
    assert.equal(r.status, 200, r.text);
    const { code } = await server.stop();
    assert.equal(code, 0);
    const steps = readFileSync(trace, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    // One prefill step, then a decode step per generated token but the last.
    assert.ok(steps.length >= 2, `${steps.length} trace lines`);
    assert.equal(steps[0].kind, 'prefill');
    assert.equal(steps[steps.length - 1].kind, 'decode');
    assert.ok(steps[0].nodes.some((n) => n.name === 'blk.0.attn'));
    const dumped = JSON.parse(readFileSync(graphs, 'utf8'));
    assert.ok(dumped.prefill && dumped.prefill.nodes.length > 0);
    assert.ok(dumped.decode && dumped.decode.nodes.length > 0);
    assert.match(server.stderr(), /prefill \(\d+ steps/);
    assert.match(server.stderr(), /decode \(\d+ steps/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
