// Malformed input: every bad request gets a 4xx with an OpenAI error JSON, slow and truncated
// requests neither hang a connection nor hurt the server, and the server stays healthy.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';

import { postJson, skipReason, startServer } from './helpers.js';

// Sends raw bytes (pieces with pauses between them) and resolves with what came back and how
// long until the server closed the connection (or timeoutMs passed: closed false).
function rawRequest(port, pieces, { pauseMs = 0, timeoutMs = 10000 } = {}) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let data = '';
    const t0 = Date.now();
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ data, closed: false, ms: Date.now() - t0 });
    }, timeoutMs);
    socket.on('data', (d) => { data += d.toString(); });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ data, closed: true, ms: Date.now() - t0 });
    });
    socket.on('error', () => {});
    socket.on('connect', async () => {
      for (const p of pieces) {
        socket.write(p);
        if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
      }
    });
  });
}

function assertOpenAiError(r, status, param) {
  assert.equal(r.status, status, r.text);
  assert.ok(r.json && r.json.error, r.text);
  for (const key of ['message', 'type', 'param', 'code']) assert.ok(key in r.json.error, key);
  assert.equal(typeof r.json.error.message, 'string');
  if (param !== undefined) assert.equal(r.json.error.param, param);
}

describe('malformed input', { skip: skipReason }, () => {
  let server;
  let url;
  const chat = (body) => postJson(`${url}/v1/chat/completions`, body);
  const user = [{ role: 'user', content: 'hi' }];

  before(async () => {
    server = await startServer(['--max-body', '65536', '--timeout', '2']);
    url = server.url;
  });
  after(async () => {
    assert.equal((await fetch(`${url}/health`)).status, 200, 'still healthy after everything');
    assert.equal((await server.stop()).code, 0);
  });

  test('malformed JSON bodies', async () => {
    for (const body of ['{bad', '', '[1,2', '{"messages": [}', 'null', '42', '"text"', '[]']) {
      assertOpenAiError(await chat(body), 400);
    }
    assertOpenAiError(await postJson(`${url}/v1/completions`, '{"prompt": "x",'), 400);
    assertOpenAiError(await postJson(`${url}/tokenize`, 'nope'), 400);
  });

  test('wrong types', async () => {
    const cases = [
      [{ messages: 'hi' }, 'messages'],
      [{ messages: [42] }, 'messages[0]'],
      [{ messages: [{ role: 5, content: 'x' }] }, 'messages[0].role'],
      [{ messages: [{ role: 'user', content: 5 }] }, 'messages[0].content'],
      [{ messages: user, max_tokens: '5' }, 'max_tokens'],
      [{ messages: user, max_tokens: 2.5 }, 'max_tokens'],
      [{ messages: user, temperature: 'hot' }, 'temperature'],
      [{ messages: user, top_p: [] }, 'top_p'],
      [{ messages: user, top_k: 1.5 }, 'top_k'],
      [{ messages: user, seed: 'x' }, 'seed'],
      [{ messages: user, stop: 5 }, 'stop'],
      [{ messages: user, stop: ['a', 3] }, 'stop[]'],
      [{ messages: user, stream: 'yes' }, 'stream'],
      [{ messages: user, stream_options: { include_usage: 1 } }, 'stream_options.include_usage'],
      [{ messages: user, logprobs: 'yes' }, 'logprobs'],
      [{ messages: user, logit_bias: [1] }, 'logit_bias'],
      [{ messages: user, logit_bias: { abc: 1 } }, 'logit_bias'],
      [{ messages: user, logit_bias: { 1: 'x' } }, 'logit_bias'],
      [{ messages: user, response_format: 'json' }, 'response_format'],
      [{ messages: user, model: 3 }, 'model'],
      [{ messages: user, user: {} }, 'user'],
    ];
    for (const [body, param] of cases) assertOpenAiError(await chat(body), 400, param);
    assertOpenAiError(await postJson(`${url}/v1/completions`, { prompt: 5 }), 400, 'prompt');
    assertOpenAiError(await postJson(`${url}/v1/completions`, { prompt: [1, 'a'] }), 400, 'prompt');
    assertOpenAiError(await postJson(`${url}/v1/completions`, { prompt: [99999999] }), 400, 'prompt');
    assertOpenAiError(await postJson(`${url}/v1/completions`, { prompt: 'x', logprobs: true }), 400, 'logprobs');
  });

  test('missing or empty messages, unknown roles, bad ranges', async () => {
    assertOpenAiError(await chat({}), 400, 'messages');
    assertOpenAiError(await chat({ messages: [] }), 400, 'messages');
    assertOpenAiError(await chat({ messages: [{ role: 'wizard', content: 'x' }] }), 400, 'messages[0].role');
    assertOpenAiError(await chat({ messages: [{ role: 'user' }] }), 400, 'messages[0].content');
    assertOpenAiError(await postJson(`${url}/v1/completions`, {}), 400, 'prompt');
    assertOpenAiError(await postJson(`${url}/v1/completions`, { prompt: '' }), 400, 'prompt');
    for (const v of [0, -1]) {
      assertOpenAiError(await chat({ messages: user, max_tokens: v }), 400, 'max_tokens');
      assertOpenAiError(await chat({ messages: user, max_completion_tokens: v }), 400, 'max_completion_tokens');
    }
    assertOpenAiError(await chat({ messages: user, temperature: -1 }), 400, 'temperature');
    assertOpenAiError(await chat({ messages: user, top_p: 1.5 }), 400, 'top_p');
    assertOpenAiError(await chat({ messages: user, n: 17 }), 400, 'n');
    assertOpenAiError(await chat({ messages: user, n: 0 }), 400, 'n');
    assertOpenAiError(await chat({ messages: user, n: 2, id_slot: 0 }), 400, 'n');
    assertOpenAiError(await chat({ messages: user, max_tokens: 4, max_completion_tokens: 5 }), 400, 'max_completion_tokens');
    assertOpenAiError(await chat({ messages: user, top_logprobs: 3 }), 400, 'top_logprobs');
    assertOpenAiError(await chat({ messages: user, logprobs: true, top_logprobs: 50 }), 400, 'top_logprobs');
    assertOpenAiError(await chat({ messages: user, logit_bias: { 5: 1000 } }), 400, 'logit_bias');
  });

  test('an oversized body is a 413 with an error JSON', async () => {
    const r = await chat({ messages: [{ role: 'user', content: 'x'.repeat(100000) }] });
    assertOpenAiError(r, 413);
  });

  test('a garbage request line gets 400 and the connection closes', async () => {
    const r = await rawRequest(server.port, ['THIS IS NOT HTTP\r\n\r\n'], { timeoutMs: 5000 });
    assert.ok(r.closed);
    assert.match(r.data, /^HTTP\/1\.1 400/);
  });

  test('a truncated body does not hang: the connection is dropped after the timeout', async () => {
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n`;
    const r = await rawRequest(server.port, [head, '{"messages": ['], { timeoutMs: 10000 });
    assert.ok(r.closed, 'closed by the server');
    assert.ok(r.ms < 8000, `closed after ${r.ms} ms`);
    assert.equal((await fetch(`${url}/health`)).status, 200);
  });

  test('a stalled header does not hang either', async () => {
    const r = await rawRequest(server.port, ['POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n'], { timeoutMs: 10000 });
    assert.ok(r.closed);
    assert.ok(r.ms < 8000);
  });

  test('a slow but steady request is served', async () => {
    const body = JSON.stringify({ prompt: 'Hello', max_tokens: 2, temperature: 0 });
    const head = `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
    const pieces = [head, ...body.match(/.{1,10}/g)];
    const r = await rawRequest(server.port, pieces, { pauseMs: 150, timeoutMs: 15000 });
    assert.match(r.data, /^HTTP\/1\.1 200/);
    assert.match(r.data, /"text_completion"/);
  });

  test('a wrong method is an error, not a crash', async () => {
    const res = await fetch(`${url}/v1/chat/completions`);
    assert.ok(res.status >= 400 && res.status < 500);
  });
});
