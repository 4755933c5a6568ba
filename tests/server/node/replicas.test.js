// Three `minfer serve` replicas behind nginx (deploy/nginx.conf.template, rendered by
// deploy/render_nginx_conf.sh on free ports): a conversation with one X-Session-Id keeps its
// replica and its cached prefix; SIGTERM to a replica during a run of requests loses none of
// them (it drains, /health says 503, nginx sends the rest elsewhere) and the replica exits 0.
// Skips without nginx (Debian's `nginx` package).
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';

import { postJson, readSse, skipOrFail, skipReason, startServer, waitFor } from './helpers.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const deploy = path.resolve(here, '../../../deploy');

function findNginx() {
  for (const p of ['/usr/sbin/nginx', '/usr/bin/nginx']) {
    try {
      execFileSync(p, ['-v'], { stdio: 'ignore' });
      return p;
    } catch {
      // next
    }
  }
  return null;
}
const nginx = findNginx();
const skip = skipReason || (nginx ? false : skipOrFail('needs nginx (/usr/sbin/nginx or /usr/bin/nginx)'));

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

describe('replicas behind nginx', { skip }, () => {
  let replicas = [];
  let proxy;
  let url;
  let prefix;

  before(async () => {
    replicas = await Promise.all([0, 1, 2].map(() =>
      startServer(['--keep-alive-timeout', '75', '--drain', '30', '-np', '2'])));
    prefix = mkdtempSync(path.join(os.tmpdir(), 'minfer-nginx-'));
    const port = await freePort();
    const conf = execFileSync(path.join(deploy, 'render_nginx_conf.sh'),
      [`127.0.0.1:${port}`, prefix, ...replicas.map((r) => `127.0.0.1:${r.port}`)],
      { env: { ...process.env, DAEMON: 'off', FAIL_TIMEOUT: '30s' } }).toString();
    writeFileSync(path.join(prefix, 'nginx.conf'), conf);
    proxy = spawn(nginx, ['-c', path.join(prefix, 'nginx.conf'), '-p', prefix], { stdio: 'ignore' });
    url = `http://127.0.0.1:${port}`;
    assert.ok(await waitFor(async () => {
      try {
        return (await fetch(`${url}/health`)).status === 200;
      } catch {
        return false;
      }
    }, 10000), 'nginx answers');
  });

  after(async () => {
    if (proxy) proxy.kill('SIGQUIT');
    await Promise.all(replicas.map((r) => r.stop()));
    if (prefix) rmSync(prefix, { recursive: true, force: true });
  });

  test('one X-Session-Id keeps its replica: turns 2 and 3 reuse the cached prefix', async () => {
    const system = 'You are a careful assistant. '.repeat(12);
    const messages = [{ role: 'system', content: system }, { role: 'user', content: 'Tell me a story.' }];
    const cached = [];
    for (let turn = 0; turn < 3; ++turn) {
      const r = await postJson(`${url}/v1/chat/completions`, { messages, max_tokens: 4, temperature: 0 },
        { 'X-Session-Id': 'conversation-42' });
      assert.equal(r.status, 200, r.text);
      cached.push(r.json.usage.prompt_tokens_details.cached_tokens);
      messages.push({ role: 'assistant', content: r.json.choices[0].message.content });
      messages.push({ role: 'user', content: `And then what happened, part ${turn + 2}?` });
    }
    assert.ok(cached[1] > 0 && cached[2] > 0, `cached_tokens per turn: ${cached}`);
  });

  test('SIGTERM to one replica during 50 requests: every request succeeds, it exits 0', async () => {
    const victim = replicas[0];
    let done = 0;
    const results = [];
    const one = async (i) => {
      const res = await fetch(`${url}/v1/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ prompt: `Request ${i}: once upon a time`, max_tokens: 24, temperature: 0, stream: true }),
      });
      const status = res.status;
      const sse = status === 200 ? await readSse(res) : { done: false, text: await res.text() };
      results.push({ i, status, done: sse.done });
      ++done;
    };
    const pending = [];
    for (let i = 0; i < 50; ++i) {
      if (i === 10) victim.proc.kill('SIGTERM');
      pending.push(one(i));
      if (pending.length % 5 === 0) await Promise.all(pending.slice(-5));
    }
    await Promise.all(pending);
    assert.equal(done, 50);
    const failed = results.filter((r) => r.status !== 200 || !r.done);
    assert.deepEqual(failed, [], 'every request got a complete stream');
    const exit = await victim.exited;
    assert.equal(exit.code, 0, victim.stderr());
  });
});
