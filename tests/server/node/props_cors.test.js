// llama-server's /props and /apply-template, and CORS: a preflight answered before the API key is
// asked for, --cors-origin limiting who may call, and a page on another origin in Debian's
// headless chromium calling the API with an Authorization header.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';

import { chromium } from 'playwright-core';

import { minferBin, modelPath, needs, postJson, skipReason, startServer, suiteServer } from './helpers.js';

const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const key = 'sk-test-cors';
const messages = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Name a colour.' },
];

describe('/props and /apply-template', { skip: skipReason }, () => {
  const ctx = suiteServer(['-np', '3']);

  test('/props describes the model, its slots, template and default settings', async () => {
    const res = await fetch(`${ctx.url}/props`);
    assert.equal(res.status, 200);
    const props = await res.json();
    assert.equal(props.model_path, modelPath);
    assert.equal(props.total_slots, 3);
    assert.ok(props.n_ctx > 0);
    assert.equal(props.default_generation_settings.n_ctx, props.n_ctx);
    const params = props.default_generation_settings.params;
    for (const field of ['temperature', 'top_k', 'top_p', 'min_p', 'repeat_penalty', 'seed']) {
      assert.ok(field in params, field);
    }
    assert.match(props.chat_template, /im_start/);
    assert.match(props.build_info, /^minfer /);
  });

  test('/apply-template gives what `minfer template` prints for the same request', async () => {
    const r = await postJson(`${ctx.url}/apply-template`, { messages });
    assert.equal(r.status, 200, r.text);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'minfer-template-'));
    try {
      const input = path.join(dir, 'request.json');
      writeFileSync(input, JSON.stringify({ messages }));
      const cli = execFileSync(minferBin, ['template', '-m', modelPath, '-i', input], { encoding: 'utf8' });
      assert.equal(r.json.prompt, cli);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const bad = await postJson(`${ctx.url}/apply-template`, { messages: 'hi' });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.param, 'messages');
  });
});

// A preflight from `origin` for a POST with Authorization.
function preflight(url, origin) {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'OPTIONS',
    headers: {
      Origin: origin,
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'authorization,content-type',
    },
  });
}

describe('CORS', { skip: skipReason }, () => {
  test('any origin by default: the preflight needs no key, the answer carries the headers', async () => {
    const server = await startServer(['--api-key', key]);
    try {
      const pre = await preflight(server.url, 'http://elsewhere.example');
      assert.equal(pre.status, 204);
      assert.equal(pre.headers.get('access-control-allow-origin'), '*');
      assert.match(pre.headers.get('access-control-allow-headers'), /Authorization/);
      assert.match(pre.headers.get('access-control-allow-methods'), /POST/);
      const res = await fetch(`${server.url}/v1/models`, {
        headers: { Origin: 'http://elsewhere.example', Authorization: `Bearer ${key}` },
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('access-control-allow-origin'), '*');
      const noKey = await fetch(`${server.url}/v1/models`, { headers: { Origin: 'http://elsewhere.example' } });
      assert.equal(noKey.status, 401);  // CORS does not stand in for the key
    } finally {
      assert.equal((await server.stop()).code, 0);
    }
  });

  test('--cors-origin: a listed origin is echoed with credentials, another is refused', async () => {
    const server = await startServer(['--cors-origin', 'http://good.example', '--cors-origin', 'http://also.example']);
    try {
      const good = await preflight(server.url, 'http://also.example');
      assert.equal(good.status, 204);
      assert.equal(good.headers.get('access-control-allow-origin'), 'http://also.example');
      assert.equal(good.headers.get('access-control-allow-credentials'), 'true');
      assert.equal(good.headers.get('vary'), 'Origin');
      const bad = await preflight(server.url, 'http://evil.example');
      assert.equal(bad.status, 403);
      assert.equal(bad.headers.get('access-control-allow-origin'), null);
      assert.match((await bad.json()).error.message, /http:\/\/evil\.example.*--cors-origin/);
      const simple = await fetch(`${server.url}/v1/models`, { headers: { Origin: 'http://evil.example' } });
      assert.equal(simple.headers.get('access-control-allow-origin'), null);
    } finally {
      assert.equal((await server.stop()).code, 0);
    }
  });

  const browserSkip = skipReason || needs(chromiumPath);
  test('a page on another origin calls the API with its key in headless chromium', { skip: browserSkip }, async () => {
    const server = await startServer(['--api-key', key]);
    // The page's own origin: another port of 127.0.0.1.
    const page = http.createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end('<!doctype html><title>other origin</title>');
    });
    await new Promise((resolve) => page.listen(0, '127.0.0.1', resolve));
    const profile = mkdtempSync(path.join(os.tmpdir(), 'minfer-chromium-'));
    const browser = await chromium.launchPersistentContext(profile, {
      executablePath: chromiumPath,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    try {
      const tab = await browser.newPage();
      await tab.goto(`http://127.0.0.1:${page.address().port}/`);
      const result = await tab.evaluate(async ({ url, apiKey }) => {
        const r = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${apiKey}` },
          body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, temperature: 0 }),
        });
        const body = await r.json();
        return { status: r.status, object: body.object, seed: r.headers.get('X-Minfer-Seed') };
      }, { url: server.url, apiKey: key });
      assert.equal(result.status, 200);
      assert.equal(result.object, 'chat.completion');
      assert.ok(result.seed !== null, 'the exposed X-Minfer-Seed header is readable');
    } finally {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
      page.close();
      assert.equal((await server.stop()).code, 0);
    }
  });
});
