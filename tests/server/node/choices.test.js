// n > 1 choices, the random default seed, max_completion_tokens and include_usage against
// `minfer serve`, with the official openai client where it applies.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { postJson, readSse, skipReason, suiteServer } from './helpers.js';

describe('n choices and seeds', { skip: skipReason }, () => {
  const ctx = suiteServer(['-np', '4']);
  // Over a KV block of 32 positions, so the shared prompt shows in the cached counts.
  const messages = [
    { role: 'system', content: 'You are a helpful assistant who answers in one short paragraph.' },
    { role: 'user', content: 'Tell me a short story about a cat, a boat and a lighthouse by the sea.' },
  ];

  test('n: 3 at temperature 1 with a seed: three different samples, the prompt counted once', async () => {
    const one = await ctx.client.chat.completions.create({ model: 'm', messages, max_tokens: 12, temperature: 0 });
    const r = await ctx.client.chat.completions.create({ model: 'm', messages, max_tokens: 12, temperature: 1, seed: 42, n: 3 });
    assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
    const texts = r.choices.map((c) => c.message.content);
    assert.equal(new Set(texts).size, 3, JSON.stringify(texts));
    assert.equal(r.usage.prompt_tokens, one.usage.prompt_tokens);
    assert.equal(r.usage.completion_tokens, 36);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 36);
    // The 2nd and 3rd choices took the prompt's full blocks from the cache: computed once.
    const cached = r.usage.choice_cached_tokens;
    assert.equal(cached.length, 3);
    assert.ok(r.usage.prompt_tokens >= 32, `prompt ${r.usage.prompt_tokens}`);
    for (const c of cached.slice(1)) {
      assert.ok(c >= 32 && c >= r.usage.prompt_tokens - 32, `cached ${c} of ${r.usage.prompt_tokens}`);
    }
    // Choice i is the seed + i sample of n = 1.
    const again = await ctx.client.chat.completions.create({ model: 'm', messages, max_tokens: 12, temperature: 1, seed: 43 });
    assert.equal(again.choices[0].message.content, texts[1]);
  });

  test('n: 3 at temperature 0: three equal choices', async () => {
    const r = await ctx.client.chat.completions.create({ model: 'm', messages, max_tokens: 10, temperature: 0, n: 3 });
    assert.equal(r.choices.length, 3);
    assert.equal(new Set(r.choices.map((c) => c.message.content)).size, 1);
  });

  test('n: 3 streamed: chunks of three indexes assemble to the blocking answer', async () => {
    const body = { model: 'm', messages, max_tokens: 12, temperature: 1, seed: 7, n: 3 };
    const blocking = await ctx.client.chat.completions.create(body);
    const stream = await ctx.client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
    const texts = ['', '', ''];
    const finishes = [null, null, null];
    let usage = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        texts[c.index] += c.delta?.content ?? '';
        if (c.finish_reason) finishes[c.index] = c.finish_reason;
      }
    }
    assert.deepEqual(texts, blocking.choices.map((c) => c.message.content));
    assert.deepEqual(finishes, blocking.choices.map((c) => c.finish_reason));
    assert.equal(usage.completion_tokens, blocking.usage.completion_tokens);
    assert.equal(usage.prompt_tokens, blocking.usage.prompt_tokens);
  });

  test('completions with n: 2 and their streamed indexes', async () => {
    const body = { model: 'm', prompt: 'Once upon a time', max_tokens: 8, temperature: 1, seed: 3, n: 2 };
    const r = await ctx.client.completions.create(body);
    assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
    assert.equal(r.usage.completion_tokens, 16);
    const stream = await ctx.client.completions.create({ ...body, stream: true });
    const texts = ['', ''];
    for await (const chunk of stream) {
      for (const c of chunk.choices) texts[c.index] += c.text;
    }
    assert.deepEqual(texts, r.choices.map((c) => c.text));
  });

  test('no seed: two requests differ at temperature 1, the reported seed repeats one', async () => {
    // The whole distribution (no top-k/p, min-p cut) and 32 tokens. Even so the tiny model falls
    // into one repeated token for about one sample in ten (measured: '牥' 3-6 times in 30, with
    // old and new binaries alike), so two samples were the same text a few times in a hundred
    // runs: six requests must give six seeds and more than one text (all six alike: ~1e-5).
    const body = { messages, max_tokens: 32, temperature: 1, top_k: 0, top_p: 1, min_p: 0 };
    const replies = [];
    for (let i = 0; i < 6; ++i) replies.push(await postJson(`${ctx.url}/v1/chat/completions`, body));
    assert.equal(new Set(replies.map((r) => r.json.usage.seed)).size, 6);
    assert.ok(new Set(replies.map((r) => r.json.choices[0].message.content)).size > 1);
    const a = replies[0];
    const seed = a.headers.get('x-minfer-seed');
    const again = await postJson(`${ctx.url}/v1/chat/completions`, { ...body, seed: Number(seed) });
    assert.equal(again.json.choices[0].message.content, a.json.choices[0].message.content);
  });

  test('max_completion_tokens: the newer name of max_tokens; both different is a 400', async () => {
    const r = await ctx.client.chat.completions.create({ model: 'm', messages, max_completion_tokens: 4, temperature: 0 });
    assert.equal(r.usage.completion_tokens, 4);
    const same = await postJson(`${ctx.url}/v1/chat/completions`, { messages, max_tokens: 4, max_completion_tokens: 4 });
    assert.equal(same.status, 200, same.text);
    const both = await postJson(`${ctx.url}/v1/chat/completions`, { messages, max_tokens: 4, max_completion_tokens: 5 });
    assert.equal(both.status, 400);
    assert.match(both.json.error.message, /max_tokens.*max_completion_tokens/);
  });

  test('completions stream_options.include_usage: a last usage chunk', async () => {
    const res = await fetch(`${ctx.url}/v1/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 5, temperature: 0, stream: true, stream_options: { include_usage: true } }),
    });
    const { events } = await readSse(res);
    const last = events[events.length - 1];
    assert.deepEqual(last.choices, []);
    assert.equal(last.usage.completion_tokens, 5);
  });

  test('n out of range is a 400', async () => {
    for (const n of [0, 17]) {
      const r = await postJson(`${ctx.url}/v1/chat/completions`, { messages, n });
      assert.equal(r.status, 400);
      assert.equal(r.json.error.param, 'n');
    }
  });
});
