// The API suite: every endpoint and request field of `minfer serve`, streaming and not.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { metrics, postJson, readSse, skipReason, startServer, suiteServer } from './helpers.js';

describe('minfer serve API', { skip: skipReason }, () => {
  const ctx = suiteServer(['-np', '4']);
  const chat = (body) => postJson(`${ctx.url}/v1/chat/completions`, body);
  const complete = (body) => postJson(`${ctx.url}/v1/completions`, body);
  const hi = [{ role: 'user', content: 'Hi there' }];

  test('GET /health is 200 when ready', async () => {
    const res = await fetch(`${ctx.url}/health`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: 'ok' });
  });

  test('GET /v1/models lists the model', async () => {
    const res = await fetch(`${ctx.url}/v1/models`);
    const body = await res.json();
    assert.equal(body.object, 'list');
    assert.equal(body.data.length, 1);
    assert.equal(body.data[0].id, 'qwen2.5-qwentok-tiny-q8_0.gguf');
    assert.equal(body.data[0].object, 'model');
  });

  test('chat completion: shape, usage, finish_reason length at max_tokens', async () => {
    const r = await chat({ model: 'x', messages: hi, max_tokens: 7, temperature: 0 });
    assert.equal(r.status, 200, r.text);
    const b = r.json;
    assert.equal(b.object, 'chat.completion');
    assert.match(b.id, /^chatcmpl-/);
    assert.equal(b.choices.length, 1);
    assert.equal(b.choices[0].message.role, 'assistant');
    assert.equal(typeof b.choices[0].message.content, 'string');
    assert.equal(b.choices[0].finish_reason, 'length');
    assert.equal(b.usage.completion_tokens, 7);
    assert.ok(b.usage.prompt_tokens > 5);
    assert.equal(b.usage.total_tokens, b.usage.prompt_tokens + 7);
    assert.equal(typeof b.usage.prompt_tokens_details.cached_tokens, 'number');
  });

  test('max_completion_tokens and greedy determinism', async () => {
    const a = await chat({ messages: hi, max_completion_tokens: 5, temperature: 0 });
    const b = await chat({ messages: hi, max_tokens: 5, temperature: 0 });
    assert.equal(a.json.usage.completion_tokens, 5);
    assert.equal(a.json.choices[0].message.content, b.json.choices[0].message.content);
  });

  test('seeded sampling repeats; top_k 1 is greedy', async () => {
    const body = { messages: hi, max_tokens: 12, temperature: 1.0, top_p: 1, min_p: 0, top_k: 0, seed: 1234 };
    const a = await chat(body);
    const b = await chat(body);
    assert.equal(a.json.choices[0].message.content, b.json.choices[0].message.content);
    const greedy = await chat({ messages: hi, max_tokens: 12, temperature: 0 });
    const k1 = await chat({ messages: hi, max_tokens: 12, temperature: 1.5, top_k: 1, seed: 7 });
    assert.equal(k1.json.choices[0].message.content, greedy.json.choices[0].message.content);
  });

  test('an unseeded request draws a seed and reports it (X-Minfer-Seed, usage.seed); it repeats the reply', async () => {
    const body = { messages: hi, max_tokens: 12, temperature: 1.0, top_p: 1, min_p: 0, top_k: 0 };
    const a = await chat(body);
    assert.equal(a.status, 200, a.text);
    const seed = a.headers.get('x-minfer-seed');
    assert.match(seed, /^[0-9]+$/);
    assert.equal(String(a.json.usage.seed), seed);
    const again = await chat({ ...body, seed: Number(seed) });
    assert.equal(again.json.choices[0].message.content, a.json.choices[0].message.content);
    const given = await chat({ ...body, seed: 1234 });
    assert.equal(given.headers.get('x-minfer-seed'), '1234');
    assert.equal(given.json.usage.seed, 1234);
  });

  // response_format json_object has its own suite (json_object.test.js): it can end a reply
  // before max_tokens.
  test('penalties, min_p, top_p, user and response_format text are accepted', async () => {
    const r = await chat({
      messages: hi, max_tokens: 4, presence_penalty: 1.5, frequency_penalty: 0.5, repeat_penalty: 1.3,
      min_p: 0.1, top_p: 0.5, user: 'someone', response_format: { type: 'text' },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.usage.completion_tokens, 4);
  });

  test('response_format json_schema with an unsupported keyword is a clear 400', async () => {
    const r = await chat({
      messages: hi, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'array', uniqueItems: true } } },
    });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.param, 'response_format');
    assert.match(r.json.error.message, /unsupported JSON Schema keyword 'uniqueItems' at #/);
  });

  test('stop strings end the reply before them with finish_reason stop', async () => {
    const full = await complete({ prompt: 'The sky is', max_tokens: 24, temperature: 0 });
    const text = full.json.choices[0].text;
    assert.ok(text.length > 6, text);
    const stop = text.slice(3, 6);
    const cut = text.slice(0, text.indexOf(stop));
    for (const s of [stop, [stop, 'never-appears']]) {
      const r = await complete({ prompt: 'The sky is', max_tokens: 24, temperature: 0, stop: s });
      assert.equal(r.json.choices[0].text, cut);
      assert.equal(r.json.choices[0].finish_reason, 'stop');
    }
  });

  test('streamed chat: chunks, role first, same text as not streamed, [DONE]', async () => {
    const plain = await chat({ messages: hi, max_tokens: 10, temperature: 0 });
    const res = await fetch(`${ctx.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages: hi, max_tokens: 10, temperature: 0, stream: true }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /text\/event-stream/);
    const { events, done } = await readSse(res);
    assert.ok(done, '[DONE] ends the stream');
    assert.ok(events.every((e) => e.object === 'chat.completion.chunk'));
    assert.equal(events[0].choices[0].delta.role, 'assistant');
    const text = events.map((e) => e.choices[0]?.delta?.content ?? '').join('');
    assert.equal(text, plain.json.choices[0].message.content);
    const last = events[events.length - 1];
    assert.equal(last.choices[0].finish_reason, 'length');
    assert.ok(events.every((e) => e.usage === undefined), 'no usage unless asked');
  });

  test('stream_options.include_usage adds a usage chunk', async () => {
    const res = await fetch(`${ctx.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages: hi, max_tokens: 6, temperature: 0, stream: true, stream_options: { include_usage: true } }),
    });
    const { events } = await readSse(res);
    const last = events[events.length - 1];
    assert.deepEqual(last.choices, []);
    assert.equal(last.usage.completion_tokens, 6);
    assert.ok(events.slice(0, -1).every((e) => e.usage === null));
  });

  test('completions: string prompt, token-id prompt, streaming', async () => {
    const tok = await postJson(`${ctx.url}/tokenize`, { content: 'Once upon a time' });
    const a = await complete({ prompt: 'Once upon a time', max_tokens: 8, temperature: 0 });
    const b = await complete({ prompt: tok.json.tokens, max_tokens: 8, temperature: 0 });
    assert.equal(a.status, 200, a.text);
    assert.equal(a.json.object, 'text_completion');
    assert.equal(a.json.choices[0].text, b.json.choices[0].text);
    assert.equal(b.json.usage.prompt_tokens, tok.json.tokens.length);
    const res = await fetch(`${ctx.url}/v1/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 8, temperature: 0, stream: true }),
    });
    const { events, done } = await readSse(res);
    assert.ok(done);
    assert.equal(events.map((e) => e.choices[0].text).join(''), a.json.choices[0].text);
  });

  test('chat logprobs with top_logprobs', async () => {
    const r = await chat({ messages: hi, max_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 3 });
    const content = r.json.choices[0].logprobs.content;
    assert.equal(content.length, 5);
    for (const t of content) {
      assert.ok(t.logprob <= 0);
      assert.equal(t.top_logprobs.length, 3);
      assert.ok(t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob);
      // Greedy: the sampled token is the most likely one.
      assert.equal(t.logprob, t.top_logprobs[0].logprob);
      assert.ok(Array.isArray(t.bytes));
    }
    const none = await chat({ messages: hi, max_tokens: 2 });
    assert.equal(none.json.choices[0].logprobs, null);
  });

  test('completion logprobs', async () => {
    const r = await complete({ prompt: 'Hello', max_tokens: 4, temperature: 0, logprobs: 2 });
    const lp = r.json.choices[0].logprobs;
    assert.equal(lp.tokens.length, 4);
    assert.equal(lp.token_logprobs.length, 4);
    assert.equal(Object.keys(lp.top_logprobs[0]).length <= 2, true);
    assert.equal(lp.text_offset[0], 0);
  });

  test('logit_bias forces a token', async () => {
    const tok = await postJson(`${ctx.url}/tokenize`, { content: ' banana' });
    assert.equal(tok.json.tokens.length, 1);
    const id = tok.json.tokens[0];
    const r = await complete({ prompt: 'Hello', max_tokens: 3, temperature: 0, logit_bias: { [id]: 100 } });
    assert.equal(r.json.choices[0].text, ' banana banana banana');
  });

  test('tokenize and detokenize round-trip', async () => {
    const t = await postJson(`${ctx.url}/tokenize`, { content: 'Hello, world! héllo' });
    assert.ok(t.json.tokens.length > 3);
    const d = await postJson(`${ctx.url}/detokenize`, { tokens: t.json.tokens });
    assert.equal(d.json.content, 'Hello, world! héllo');
    const p = await postJson(`${ctx.url}/tokenize`, { content: 'Hello', with_pieces: true });
    assert.equal(p.json.tokens[0].piece, 'Hello');
    const special = await postJson(`${ctx.url}/tokenize`, { content: '<|im_start|>' });
    assert.equal(special.json.tokens.length, 1);
    const bad = await postJson(`${ctx.url}/detokenize`, { tokens: [-1] });
    assert.equal(bad.status, 400);
  });

  test('a repeated long prefix is reported as cached_tokens', async () => {
    const system = 'You are a careful assistant. '.repeat(20);
    const body = (q) => ({ messages: [{ role: 'system', content: system }, { role: 'user', content: q }], max_tokens: 2, temperature: 0 });
    const first = await chat(body('First question?'));
    const second = await chat(body('Second question?'));
    assert.ok(first.json.usage.prompt_tokens > 100);
    assert.ok(second.json.usage.prompt_tokens_details.cached_tokens >= 96,
      JSON.stringify(second.json.usage));
  });

  test('GET /metrics: vLLM names, counters move, KV gauges', async () => {
    const before = await metrics(ctx.url);
    await chat({ messages: hi, max_tokens: 3, temperature: 0 });
    const m = await metrics(ctx.url);
    for (const name of ['vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:prompt_tokens_total',
      'vllm:generation_tokens_total', 'minfer_kv_blocks_used', 'minfer_kv_blocks_free']) {
      assert.ok(m.get(name) !== undefined, name);
    }
    assert.match(m.text, /# TYPE vllm:time_to_first_token_seconds histogram/);
    assert.match(m.text, /vllm:time_per_output_token_seconds_bucket\{[^}]*le="\+Inf"\}/);
    assert.match(m.text, /vllm:request_success_total\{[^}]*finished_reason="length"\}/);
    assert.equal(m.get('vllm:generation_tokens_total') - before.get('vllm:generation_tokens_total'), 3);
    assert.equal(m.get('minfer_kv_blocks_used'), 0);
  });

  test('unknown paths are 404 with an error JSON', async () => {
    const res = await fetch(`${ctx.url}/v1/nothing`);
    assert.equal(res.status, 404);
    const b = await res.json();
    assert.ok(b.error.message);
  });
});

describe('minfer serve options', { skip: skipReason }, () => {
  test('--api-key: 401 without the bearer key, /health stays open', async () => {
    const s = await startServer(['--api-key', 'sekret']);
    try {
      const no = await postJson(`${s.url}/v1/chat/completions`, { messages: [{ role: 'user', content: 'x' }], max_tokens: 1 });
      assert.equal(no.status, 401);
      assert.equal(no.json.error.code, 'invalid_api_key');
      const wrong = await postJson(`${s.url}/v1/completions`, { prompt: 'x', max_tokens: 1 }, { Authorization: 'Bearer nope' });
      assert.equal(wrong.status, 401);
      const ok = await postJson(`${s.url}/v1/completions`, { prompt: 'x', max_tokens: 1 }, { Authorization: 'Bearer sekret' });
      assert.equal(ok.status, 200);
      assert.equal((await fetch(`${s.url}/health`)).status, 200);
      assert.equal((await fetch(`${s.url}/v1/models`)).status, 401);
    } finally {
      assert.equal((await s.stop()).code, 0);
    }
  });

  test('--max-queue: 503 with an OpenAI error past the queue', async () => {
    const s = await startServer(['-np', '1', '--max-queue', '0']);
    try {
      const controller = new AbortController();
      const long = fetch(`${s.url}/v1/completions`, {
        method: 'POST', signal: controller.signal, headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ prompt: 'Hello', max_tokens: 3000, ignore_eos: true, stream: true }),
      });
      const res = await long;
      const reader = res.body.getReader();
      await reader.read();  // it runs
      const refused = await postJson(`${s.url}/v1/completions`, { prompt: 'x', max_tokens: 1 });
      assert.equal(refused.status, 503);
      assert.equal(refused.json.error.code, 'queue_full');
      controller.abort();
    } finally {
      assert.equal((await s.stop()).code, 0);
    }
  });

  test('a prompt longer than the context is a 400', async () => {
    const s = await startServer(['--ctx-per-seq', '64']);
    try {
      const r = await postJson(`${s.url}/v1/chat/completions`, { messages: [{ role: 'user', content: 'word '.repeat(200) }] });
      assert.equal(r.status, 400);
      assert.equal(r.json.error.code, 'context_length_exceeded');
      const ok = await postJson(`${s.url}/v1/completions`, { prompt: 'Hi', max_tokens: 100, temperature: 0 });
      assert.equal(ok.status, 200);
      assert.equal(ok.json.choices[0].finish_reason, 'length', 'a full context is reported as length');
    } finally {
      assert.equal((await s.stop()).code, 0);
    }
  });

  test('SIGTERM during a stream: the stream ends, the server exits 0 within seconds', async () => {
    const s = await startServer(['--drain', '1']);
    const res = await fetch(`${s.url}/v1/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: 'Hello', max_tokens: 4000, stream: true }),
    });
    const reader = res.body.getReader();
    await reader.read();
    const t0 = Date.now();
    s.proc.kill('SIGTERM');
    let body = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      body += Buffer.from(value).toString();
    }
    assert.match(body, /data: \[DONE\]/);
    const { code } = await s.exited;
    assert.equal(code, 0);
    assert.ok(Date.now() - t0 < 8000);
  });
});
