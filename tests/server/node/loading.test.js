// Start-up: the listener comes first and every model endpoint answers 503 with an OpenAI error
// while the model loads (stretched by MINFER_TEST_LOAD_DELAY_MS so the test can see it), then
// 200; a model that fails to load ends the process with exit code 1 and the error, not a hang.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';

import { minferBin, modelPath, skipReason } from './helpers.js';

// Spawns `minfer serve` and resolves with the URL once it listens (not waiting for the model).
function spawnServe(model, env = {}) {
  const proc = spawn(minferBin, ['serve', '-m', model, '--port', '0', '-t', '2'], {
    stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env },
  });
  let stderr = '';
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const listening = new Promise((resolve) => {
    proc.stderr.on('data', (d) => {
      stderr += d.toString();
      const m = stderr.match(/listening on (http:\/\/[0-9.]+:\d+)/);
      if (m) resolve(m[1]);
    });
  });
  return { proc, exited, listening, stderr: () => stderr };
}

async function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms); });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe('minfer serve start-up', { skip: skipReason }, () => {
  test('/health is 503 (OpenAI error JSON) while the model loads, then 200', async () => {
    const s = spawnServe(modelPath, { MINFER_TEST_LOAD_DELAY_MS: '1500' });
    try {
      const url = await withTimeout(s.listening, 30000, 'listening');
      // Loading: every endpoint that needs the model says so.
      const health = await fetch(`${url}/health`);
      assert.equal(health.status, 503);
      const body = await health.json();
      assert.equal(body.error.code, 'model_loading');
      assert.equal(body.error.type, 'unavailable_error');
      assert.match(body.error.message, /loading/);
      for (const [method, p] of [['GET', '/v1/models'], ['GET', '/metrics'], ['POST', '/v1/chat/completions'],
        ['POST', '/v1/completions'], ['POST', '/tokenize'], ['POST', '/detokenize']]) {
        const r = await fetch(`${url}${p}`, {
          method, headers: { 'Content-Type': 'application/json' },
          body: method === 'POST' ? JSON.stringify({ messages: [{ role: 'user', content: 'x' }], prompt: 'x', content: 'x', tokens: [1] }) : undefined,
        });
        assert.equal(r.status, 503, `${method} ${p} while loading`);
        assert.equal((await r.json()).error.code, 'model_loading', `${method} ${p}`);
      }
      // Then ready: 200, and generation works.
      const seen = [];
      const deadline = Date.now() + 30000;
      for (;;) {
        const r = await fetch(`${url}/health`);
        seen.push(r.status);
        if (r.status === 200) {
          assert.deepEqual(await r.json(), { status: 'ok' });
          break;
        }
        assert.equal(r.status, 503);
        await r.arrayBuffer();
        assert.ok(Date.now() < deadline, 'ready within 30 s');
        await new Promise((res) => setTimeout(res, 50));
      }
      assert.ok(seen.filter((c) => c === 503).length >= 2, `503 seen while loading: ${seen}`);
      assert.match(s.stderr(), /minfer serve: ready/);
      const r = await fetch(`${url}/v1/completions`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ prompt: 'Hi', max_tokens: 2 }),
      });
      assert.equal(r.status, 200);
    } finally {
      s.proc.kill('SIGTERM');
      assert.equal((await withTimeout(s.exited, 15000, 'exit')).code, 0);
    }
  });

  test('SIGTERM while loading exits 0', async () => {
    const s = spawnServe(modelPath, { MINFER_TEST_LOAD_DELAY_MS: '1000' });
    await withTimeout(s.listening, 30000, 'listening');
    s.proc.kill('SIGTERM');
    assert.equal((await withTimeout(s.exited, 15000, 'exit')).code, 0);
  });

  test('a model that fails to load ends the process with exit code 1 and the error', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'minfer-serve-'));
    try {
      const missing = spawnServe(path.join(dir, 'no-such-model.gguf'));
      const m = await withTimeout(missing.exited, 30000, 'exit after a missing model');
      assert.equal(m.code, 1, missing.stderr());
      assert.match(missing.stderr(), /no-such-model\.gguf/);

      const broken = path.join(dir, 'broken.gguf');
      writeFileSync(broken, Buffer.from('GGUF\x03\x00\x00\x00 this is not a model', 'latin1'));
      const b = spawnServe(broken, { MINFER_TEST_LOAD_DELAY_MS: '300' });
      const url = await withTimeout(b.listening, 30000, 'listening');
      assert.equal((await fetch(`${url}/health`)).status, 503);
      const e = await withTimeout(b.exited, 30000, 'exit after a broken model');
      assert.equal(e.code, 1, b.stderr());
      assert.match(b.stderr(), /minfer serve: .*gguf/i);

      const badDelay = spawnServe(modelPath, { MINFER_TEST_LOAD_DELAY_MS: 'soon' });
      const d = await withTimeout(badDelay.exited, 30000, 'exit after a bad delay');
      assert.equal(d.code, 1);
      assert.match(badDelay.stderr(), /MINFER_TEST_LOAD_DELAY_MS/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
