// serve --spec-ngram: speculative decoding by prompt lookup per request, batched with the other
// sequences. The text is the same with and without it (greedy, and sampled with a seed: a row is
// used only while every token before it is the one sampled), timings report the drafts
// (llama-server's draft_n, draft_n_accepted), /metrics counts them, a request turns it on or off
// (spec_ngram, speculative.n_max) and bad settings are 400s.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { metrics, postJson, readSse, skipReason, suiteServer } from './helpers.js';

// A prompt the reply tends to repeat.
const prompt = 'Once upon a time there was a little cat. '.repeat(4);

async function complete(url, extra = {}) {
  const r = await postJson(`${url}/v1/completions`, { prompt, max_tokens: 48, temperature: 0, ...extra });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

describe('speculative decoding', { skip: skipReason }, () => {
  const ctx = suiteServer(['-np', '3', '--spec-ngram', '1', '--draft-max', '8']);

  test('greedy text is the same with and without it, and timings show the drafts', async () => {
    const spec = await complete(ctx.url);
    const plain = await complete(ctx.url, { spec_ngram: 0 });
    assert.equal(spec.choices[0].text, plain.choices[0].text);
    assert.equal(spec.choices[0].finish_reason, plain.choices[0].finish_reason);
    assert.equal(spec.usage.completion_tokens, plain.usage.completion_tokens);
    assert.ok(spec.timings.draft_n > 0, JSON.stringify(spec.timings));
    assert.ok(spec.timings.draft_n_accepted > 0, JSON.stringify(spec.timings));
    assert.ok(spec.timings.draft_n_accepted <= spec.timings.draft_n);
    assert.equal(spec.timings.predicted_n, spec.usage.completion_tokens);
    assert.equal(plain.timings.draft_n, undefined);
    // speculative.n_max 0 turns it off as well.
    const off = await complete(ctx.url, { 'speculative.n_max': 0 });
    assert.equal(off.choices[0].text, plain.choices[0].text);
    assert.equal(off.timings.draft_n, undefined);
  });

  test('requests speculating beside others all give their own text', async () => {
    const chat = { messages: [{ role: 'user', content: 'Tell me about the sea.' }], max_tokens: 32, temperature: 0 };
    const alone = await postJson(`${ctx.url}/v1/chat/completions`, { ...chat, spec_ngram: 0 });
    const plain = await complete(ctx.url, { spec_ngram: 0 });
    const [a, b, c] = await Promise.all([
      complete(ctx.url),
      complete(ctx.url, { 'speculative.n_max': 3, 'speculative.n_min': 2 }),
      postJson(`${ctx.url}/v1/chat/completions`, { ...chat, spec_ngram: 0 }),
    ]);
    assert.equal(a.choices[0].text, plain.choices[0].text);
    assert.equal(b.choices[0].text, plain.choices[0].text);
    assert.equal(c.status, 200, c.text);
    assert.equal(c.json.choices[0].message.content, alone.json.choices[0].message.content);
    const m = await metrics(ctx.url);
    assert.ok(m.get('vllm:spec_decode_num_draft_tokens_total') > 0, m.text);
    assert.ok(m.get('vllm:spec_decode_num_accepted_tokens_total') > 0, m.text);
    assert.ok(m.get('vllm:spec_decode_num_drafts_total') > 0, m.text);
  });

  test('sampled requests complete, with the text of the same seed without it', async () => {
    const sampled = { temperature: 0.9, seed: 7 };
    const spec = await complete(ctx.url, sampled);
    const plain = await complete(ctx.url, { ...sampled, spec_ngram: 0 });
    assert.equal(spec.choices[0].text, plain.choices[0].text);
    assert.equal(spec.usage.completion_tokens, plain.usage.completion_tokens);
  });

  test('streamed replies and grammars keep their text; the last chunk has the timings', async () => {
    const res = await fetch(`${ctx.url}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt, max_tokens: 48, temperature: 0, stream: true }),
    });
    assert.equal(res.status, 200);
    const { events, done } = await readSse(res);
    assert.ok(done);
    const text = events.map((e) => e.choices[0]?.text ?? '').join('');
    const plain = await complete(ctx.url, { spec_ngram: 0 });
    assert.equal(text, plain.choices[0].text);
    const last = events[events.length - 1];
    assert.ok(last.timings.draft_n > 0, JSON.stringify(last));
    const json = { prompt, max_tokens: 40, temperature: 0, response_format: { type: 'json_object' } };
    const g = await complete(ctx.url, json);
    const gPlain = await complete(ctx.url, { ...json, spec_ngram: 0 });
    assert.equal(g.choices[0].text, gPlain.choices[0].text);
  });

  test('bad settings are 400s naming the field', async () => {
    for (const [body, field] of [
      [{ spec_ngram: -1 }, 'spec_ngram'],
      [{ spec_ngram: 65 }, 'spec_ngram'],
      [{ spec_ngram: 'two' }, 'spec_ngram'],
      [{ 'speculative.n_max': 257 }, 'speculative.n_max'],
      [{ 'speculative.n_min': 9 }, 'speculative.n_min'], // more than the server's --draft-max 8
      [{ 'speculative.p_min': 1.5 }, 'speculative.p_min'],
    ]) {
      const r = await postJson(`${ctx.url}/v1/completions`, { prompt, max_tokens: 4, ...body });
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.equal(r.json.error.param, field);
    }
  });
});
