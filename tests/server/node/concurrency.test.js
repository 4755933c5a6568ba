// Many clients at once: 16 simultaneous greedy streams each get exactly the reply they get alone,
// and a client that disconnects mid-stream (or mid-request) is cancelled and its blocks freed.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { metrics, postJson, readSse, skipReason, suiteServer, waitFor } from './helpers.js';

async function streamChat(url, content, maxTokens) {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content }], max_tokens: maxTokens, temperature: 0, stream: true }),
  });
  assert.equal(res.status, 200);
  const { events, done } = await readSse(res);
  assert.ok(done);
  return events.map((e) => e.choices[0]?.delta?.content ?? '').join('');
}

describe('concurrency', { skip: skipReason }, () => {
  const ctx = suiteServer(['-np', '16']);

  test('16 simultaneous streams each get the reply they get alone', async () => {
    const prompts = Array.from({ length: 16 }, (_, i) => `Question number ${i}: ${'why '.repeat(i)}?`);
    const alone = [];
    for (const p of prompts) alone.push(await streamChat(ctx.url, p, 24));
    const together = await Promise.all(prompts.map((p) => streamChat(ctx.url, p, 24)));
    for (let i = 0; i < prompts.length; ++i) {
      assert.ok(alone[i].length > 0);
      assert.equal(together[i], alone[i], `prompt ${i}`);
    }
  });

  test('a client that disconnects mid-stream is cancelled and its blocks freed', async () => {
    const before = await metrics(ctx.url);
    const controller = new AbortController();
    const res = await fetch(`${ctx.url}/v1/completions`, {
      method: 'POST', signal: controller.signal, headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: 'Tell me a long story about '.repeat(8), max_tokens: 3500, stream: true }),
    });
    const reader = res.body.getReader();
    for (let i = 0; i < 3; ++i) await reader.read();
    const during = await metrics(ctx.url);
    assert.equal(during.get('vllm:num_requests_running'), 1);
    assert.ok(during.get('minfer_kv_blocks_used') > 0);
    controller.abort();
    const freed = await waitFor(async () => {
      const m = await metrics(ctx.url);
      return m.get('minfer_kv_blocks_used') === 0 && m.get('vllm:num_requests_running') === 0;
    });
    assert.ok(freed, 'blocks freed after the disconnect');
    const m = await metrics(ctx.url);
    const aborted = (x) => x.values['vllm:request_success_total{model_name="qwen2.5-qwentok-tiny-q8_0.gguf",finished_reason="abort"}'];
    assert.equal(aborted(m) - aborted(before), 1);
    assert.ok(m.get('vllm:generation_tokens_total') - before.get('vllm:generation_tokens_total') < 3000);
  });

  test('a client that disconnects while waiting for a non-streamed reply is cancelled', async () => {
    const controller = new AbortController();
    const pending = fetch(`${ctx.url}/v1/completions`, {
      method: 'POST', signal: controller.signal, headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: 'Hello', max_tokens: 3500 }),
    }).catch(() => null);
    assert.ok(await waitFor(async () => (await metrics(ctx.url)).get('vllm:num_requests_running') === 1));
    controller.abort();
    await pending;
    assert.ok(await waitFor(async () => {
      const m = await metrics(ctx.url);
      return m.get('vllm:num_requests_running') === 0 && m.get('minfer_kv_blocks_used') === 0;
    }));
    const ok = await postJson(`${ctx.url}/v1/completions`, { prompt: 'Hi', max_tokens: 2 });
    assert.equal(ok.status, 200);
  });
});
