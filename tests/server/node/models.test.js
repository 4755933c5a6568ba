// One server, many models (serve --models-dir): every GGUF in the folder is listed by its file
// stem, a request's `model` picks one (loaded on first use, the least recently used unloaded past
// --models-max), each answers as a server on that file alone does, an unknown model is a 404 in
// OpenAI's format, and /models/load and /models/unload control what is loaded.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { minferBin, needs, postJson, startServer, testData } from './helpers.js';

const files = ['qwen3-qwentok-tiny-q8_0.gguf', 'stories260K.gguf'].map((f) => path.join(testData, 'models', f));
const ids = ['qwen3-qwentok-tiny-q8_0', 'stories260K'];
const skip = needs(minferBin, ...files);

const request = (model) => ({ model, prompt: 'Once upon a time', max_tokens: 12, temperature: 0 });

async function complete(url, model) {
  const r = await postJson(`${url}/v1/completions`, request(model));
  assert.equal(r.status, 200, r.text);
  return r.json;
}

async function statuses(url) {
  const res = await fetch(`${url}/v1/models`);
  assert.equal(res.status, 200);
  const body = await res.json();
  return Object.fromEntries(body.data.map((m) => [m.id, m.status]));
}

describe('serve --models-dir', { skip }, () => {
  const expected = {};  // id → the text a server on that file alone gives
  let dir;
  let server;

  before(async () => {
    for (let i = 0; i < files.length; ++i) {
      const single = await startServer([], {}, files[i]);
      try {
        expected[ids[i]] = (await complete(single.url, 'ignored')).choices[0].text;
      } finally {
        await single.stop();
      }
    }
    dir = mkdtempSync(path.join(os.tmpdir(), 'minfer-models-'));
    files.forEach((f) => symlinkSync(f, path.join(dir, path.basename(f))));
    server = await startServer(['--models-dir', dir, '--models-max', '1'], {}, null);
  });

  after(async () => {
    if (server) assert.deepEqual(await server.stop(), { code: 0, signal: null });
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('/v1/models lists every model by its file stem, none loaded yet', async () => {
    assert.deepEqual(await statuses(server.url), { [ids[0]]: 'unloaded', [ids[1]]: 'unloaded' });
  });

  test('requests alternate between the models and answer as a single-model server does', async () => {
    for (const id of [ids[0], ids[1], ids[0], ids[1]]) {
      const reply = await complete(server.url, id);
      assert.equal(reply.model, id);
      assert.equal(reply.choices[0].text, expected[id], id);
      // --models-max 1: the other model was unloaded to load this one.
      assert.deepEqual(await statuses(server.url), Object.fromEntries(ids.map((m) => [m, m === id ? 'loaded' : 'unloaded'])));
    }
  });

  test('chat requests pick their model too', async () => {
    const r = await postJson(`${server.url}/v1/chat/completions`, {
      model: ids[0], messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, temperature: 0,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.model, ids[0]);
  });

  test('requests for both models at once all answer (a load waits for the other to go idle)', async () => {
    const replies = await Promise.all([ids[0], ids[1], ids[0], ids[1]].map((id) => complete(server.url, id)));
    replies.forEach((reply) => assert.equal(reply.choices[0].text, expected[reply.model]));
  });

  test('an unknown model is a 404 in OpenAI error format', async () => {
    const r = await postJson(`${server.url}/v1/completions`, request('no-such-model'));
    assert.equal(r.status, 404);
    assert.deepEqual(Object.keys(r.json.error).sort(), ['code', 'message', 'param', 'type']);
    assert.equal(r.json.error.type, 'invalid_request_error');
    assert.equal(r.json.error.param, 'model');
    assert.equal(r.json.error.code, 'model_not_found');
    assert.match(r.json.error.message, /no-such-model/);
    const u = await postJson(`${server.url}/models/unload`, { model: 'no-such-model' });
    assert.equal(u.status, 404);
    assert.equal(u.json.error.code, 'model_not_found');
  });

  test('/models/unload then a request reloads; /models/load loads', async () => {
    await complete(server.url, ids[1]);
    const u = await postJson(`${server.url}/models/unload`, { model: ids[1] });
    assert.equal(u.status, 200, u.text);
    assert.equal((await statuses(server.url))[ids[1]], 'unloaded');
    assert.equal((await complete(server.url, ids[1])).choices[0].text, expected[ids[1]]);
    const l = await postJson(`${server.url}/models/load`, { model: ids[0] });
    assert.equal(l.status, 200, l.text);
    assert.deepEqual(await statuses(server.url), { [ids[0]]: 'loaded', [ids[1]]: 'unloaded' });
    const bad = await postJson(`${server.url}/models/load`, {});
    assert.equal(bad.status, 400);
  });
});

describe('serve --models-memory', { skip }, () => {
  let dir;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'minfer-models-mem-'));
    files.forEach((f) => symlinkSync(f, path.join(dir, path.basename(f))));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  // Requests for each model in turn with --models-max 2; the statuses after the second.
  async function loadBoth(memoryArgs) {
    const server = await startServer(['--models-dir', dir, '--models-max', '2', '-c', '512', ...memoryArgs], {}, null);
    try {
      for (const id of ids) await complete(server.url, id);
      return await statuses(server.url);
    } finally {
      assert.deepEqual(await server.stop(), { code: 0, signal: null });
    }
  }

  test('both models stay loaded when memory allows; a budget of both files alone unloads the first', async () => {
    assert.deepEqual(await loadBoth([]), { [ids[0]]: 'loaded', [ids[1]]: 'loaded' });
    // Both files fit, but not with the first model's KV cells beside them: the second load
    // unloads the first, although --models-max would allow both.
    const files_bytes = files.reduce((n, f) => n + statSync(f).size, 0);
    assert.deepEqual(await loadBoth(['--models-memory', String(files_bytes + 1024)]),
      { [ids[0]]: 'unloaded', [ids[1]]: 'loaded' });
  });

  test('a model larger than the whole budget is refused with the flag named, and the server still answers', async () => {
    const server = await startServer(['--models-dir', dir, '--models-memory', '64KiB'], {}, null);
    try {
      const r = await postJson(`${server.url}/v1/completions`, request(ids[0]));
      assert.notEqual(r.status, 200);
      assert.match(r.json.error.message, /more than the memory budget of 0 MiB .*--models-memory/);
      assert.equal((await fetch(`${server.url}/health`)).status, 200);
    } finally {
      assert.deepEqual(await server.stop(), { code: 0, signal: null });
    }
  });
});

describe('serve --models-hf-cache', { skip }, () => {
  test('serves the GGUFs of the Hugging Face cache as REPO:STEM', async () => {
    const cache = mkdtempSync(path.join(os.tmpdir(), 'minfer-hf-'));
    const snapshot = path.join(cache, 'models--org--tiny', 'snapshots', 'abc123');
    mkdirSync(snapshot, { recursive: true });
    symlinkSync(files[1], path.join(snapshot, 'stories260K-Q8_0.gguf'));
    const server = await startServer(['--models-hf-cache'], { HF_HUB_CACHE: cache }, null);
    try {
      const id = 'org/tiny:stories260K-Q8_0';
      assert.deepEqual(await statuses(server.url), { [id]: 'unloaded' });
      const reply = await complete(server.url, id);
      assert.equal(reply.model, id);
      assert.ok(reply.choices[0].text.length > 0);
    } finally {
      assert.deepEqual(await server.stop(), { code: 0, signal: null });
      rmSync(cache, { recursive: true, force: true });
    }
  });
});
