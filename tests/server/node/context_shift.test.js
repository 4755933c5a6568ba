// serve --context-shift: a request whose generation passes the context goes on to its max_tokens
// (the older half of its tokens after the kept ones discarded, nothing computed again); without
// the flag the same request ends at the context.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { postJson, skipReason, startServer } from './helpers.js';

// End-of-generation tokens of the Qwen2.5 tokenizer, banned so that only the length ends a reply.
const noEog = { 151643: -100, 151645: -100 };

describe('context shift', { skip: skipReason }, () => {
  test('a completion three times the context completes with its max_tokens', async () => {
    const s = await startServer(['-np', '2', '--ctx-per-seq', '64', '--context-shift']);
    try {
      const body = { prompt: 'Once upon a time', max_tokens: 200, temperature: 0, logit_bias: noEog };
      const r = await postJson(`${s.url}/v1/completions`, body);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.choices[0].finish_reason, 'length');
      assert.equal(r.json.usage.completion_tokens, 200);
      // A chat with a system prompt (kept by default) goes on as well.
      const chat = await postJson(`${s.url}/v1/chat/completions`, {
        messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Count.' }],
        max_tokens: 150, temperature: 0, logit_bias: noEog,
      });
      assert.equal(chat.status, 200, chat.text);
      assert.equal(chat.json.usage.completion_tokens, 150);
      assert.equal(chat.json.choices[0].finish_reason, 'length');
    } finally {
      assert.equal((await s.stop()).code, 0);
    }
  });

  test('without the flag the same request ends at the context', async () => {
    const s = await startServer(['-np', '1', '--ctx-per-seq', '64']);
    try {
      const body = { prompt: 'Once upon a time', max_tokens: 200, temperature: 0, logit_bias: noEog };
      const r = await postJson(`${s.url}/v1/completions`, body);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.choices[0].finish_reason, 'length');
      assert.ok(r.json.usage.completion_tokens < 64, `${r.json.usage.completion_tokens} tokens`);
    } finally {
      assert.equal((await s.stop()).code, 0);
    }
  });

  test('a --keep beyond the context or malformed is refused at start', async () => {
    for (const keep of ['100', '-5', 'x']) {
      await assert.rejects(
        startServer(['--ctx-per-seq', '64', '--context-shift', '--keep', keep]),
        /keep/i, `--keep ${keep}`);
    }
  });
});
