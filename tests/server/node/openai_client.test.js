// The official openai npm client against `minfer serve`: chat (streaming and not), completions,
// models.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import OpenAI from 'openai';

import { skipReason, suiteServer } from './helpers.js';

describe('openai client', { skip: skipReason }, () => {
  const ctx = suiteServer(['--api-key', 'test-key']);

  test('models.list', async () => {
    const page = await ctx.client.models.list();
    const ids = page.data.map((m) => m.id);
    assert.deepEqual(ids, ['qwen2.5-qwentok-tiny-q8_0.gguf']);
  });

  test('chat.completions.create, not streamed and streamed, agree', async () => {
    const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello!' }];
    const r = await ctx.client.chat.completions.create({ model: 'm', messages, max_tokens: 12, temperature: 0 });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.equal(r.usage.completion_tokens, 12);
    assert.equal(r.choices[0].finish_reason, 'length');
    const stream = await ctx.client.chat.completions.create({
      model: 'm', messages, max_tokens: 12, temperature: 0, stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let usage = null;
    let finish = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        text += c.delta?.content ?? '';
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    assert.equal(text, r.choices[0].message.content);
    assert.equal(finish, 'length');
    assert.equal(usage.completion_tokens, 12);
  });

  test('completions.create', async () => {
    const r = await ctx.client.completions.create({ model: 'm', prompt: 'Once upon a time', max_tokens: 6, temperature: 0 });
    assert.equal(r.object, 'text_completion');
    assert.equal(r.usage.completion_tokens, 6);
    const stream = await ctx.client.completions.create({ model: 'm', prompt: 'Once upon a time', max_tokens: 6, temperature: 0, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    assert.equal(text, r.choices[0].text);
  });

  test('errors surface as APIError with the status', async () => {
    await assert.rejects(
      ctx.client.chat.completions.create({ model: 'm', messages: [], max_tokens: 1 }),
      (e) => e instanceof OpenAI.APIError && e.status === 400 && e.param === 'messages');
    const bad = new OpenAI({ baseURL: `${ctx.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(bad.models.list(), (e) => e.status === 401);
  });
});
