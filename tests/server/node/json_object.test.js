// response_format {"type": "json_object"}: grammar-constrained sampling makes every reply one
// JSON object that JSON.parse accepts, then the reply ends (finish_reason "stop"); max_tokens can
// cut it first ("length"). Chat and completions, streamed and not, greedy and sampled, and many at
// once in one batch (each request keeps its own recognizer state).
//
// The model is stories260K (a real trained model, SentencePiece with byte fallback): it writes
// story text with dialogue in the strings. Left alone it rarely chooses '}' over ',' after a
// value, so requests give '}' a logit bias of +10 to let objects close within max_tokens; the
// constraint alone decides what is valid (the bias cannot make '}' appear where it is not).
import assert from 'node:assert/strict';
import path from 'node:path';
import { before, describe, test } from 'node:test';

import { minferBin, needs, postJson, readSse, suiteServer, testData } from './helpers.js';

const storiesPath = path.join(testData, 'models', 'stories260K.gguf');
const skip = needs(minferBin, storiesPath);

const jsonObject = { type: 'json_object' };
const ask = [
  { role: 'system', content: 'You answer with one JSON object.' },
  { role: 'user', content: 'Tell me about Lily as JSON.' },
];
const maxTokens = 1500;

function assertObject(text, what) {
  let value;
  assert.doesNotThrow(() => { value = JSON.parse(text); }, `${what}: not JSON: ${text}`);
  assert.equal(typeof value, 'object', `${what}: ${text}`);
  assert.ok(value !== null && !Array.isArray(value), `${what}: not an object: ${text}`);
  return value;
}

describe('response_format json_object', { skip }, () => {
  const ctx = suiteServer(['-np', '4'], {}, storiesPath);
  let bias;  // logit_bias: the '}' token +10
  const chat = (body) => postJson(`${ctx.url}/v1/chat/completions`, { logit_bias: bias, ...body });
  const complete = (body) => postJson(`${ctx.url}/v1/completions`, { logit_bias: bias, ...body });

  before(async () => {
    const t = await postJson(`${ctx.url}/tokenize`, { content: '}', with_pieces: true });
    const close = t.json.tokens.find((x) => x.piece === '}');
    assert.ok(close, JSON.stringify(t.json));
    bias = { [close.id]: 10 };
  });

  test('chat replies parse as one object at temperatures 0 and 1, several seeds', async () => {
    const seen = new Set();
    for (const temperature of [0, 1]) {
      for (const seed of [1, 2, 3, 4, 5]) {
        const r = await chat({ messages: ask, response_format: jsonObject, temperature, seed, max_tokens: maxTokens });
        assert.equal(r.status, 200, r.text);
        const choice = r.json.choices[0];
        const what = `temperature ${temperature} seed ${seed}`;
        assert.equal(choice.finish_reason, 'stop', `${what}: ${choice.message.content}`);
        assertObject(choice.message.content, what);
        assert.ok(r.json.usage.completion_tokens < maxTokens);
        seen.add(choice.message.content);
      }
    }
    assert.ok(seen.size >= 3, 'sampling with different seeds gives different objects');
  });

  test('streamed chat: the deltas join to the reply not streamed', async () => {
    for (const seed of [1, 7]) {
      const body = { messages: ask, response_format: jsonObject, temperature: 1, seed, max_tokens: maxTokens, logit_bias: bias };
      const plain = await chat(body);
      const res = await fetch(`${ctx.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ ...body, stream: true }),
      });
      assert.equal(res.status, 200);
      const { events, done } = await readSse(res);
      assert.ok(done);
      const text = events.map((e) => e.choices[0]?.delta?.content ?? '').join('');
      assert.equal(events[events.length - 1].choices[0].finish_reason, 'stop');
      assertObject(text, `streamed seed ${seed}`);
      assert.equal(text, plain.json.choices[0].message.content);
    }
  });

  test('completions: text prompt and streamed, greedy and sampled', async () => {
    for (const temperature of [0, 1]) {
      for (const seed of [3, 11]) {
        const body = { prompt: 'Once upon a time', response_format: jsonObject, temperature, seed, max_tokens: maxTokens, logit_bias: bias };
        const r = await complete(body);
        assert.equal(r.status, 200, r.text);
        assert.equal(r.json.choices[0].finish_reason, 'stop');
        assertObject(r.json.choices[0].text, `completion temperature ${temperature} seed ${seed}`);
        const res = await fetch(`${ctx.url}/v1/completions`, {
          method: 'POST', headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ ...body, stream: true }),
        });
        const { events } = await readSse(res);
        const text = events.map((e) => e.choices[0]?.text ?? '').join('');
        assert.equal(text, r.json.choices[0].text);
      }
    }
  });

  test('max_tokens can cut the object first: finish_reason length', async () => {
    const r = await chat({ messages: ask, response_format: jsonObject, temperature: 1, seed: 2, max_tokens: 3 });
    assert.equal(r.status, 200);
    const choice = r.json.choices[0];
    if (choice.finish_reason === 'stop') {
      assertObject(choice.message.content, 'closed within 3 tokens');
    } else {
      assert.equal(choice.finish_reason, 'length');
      assert.equal(r.json.usage.completion_tokens, 3);
      // Whitespace, then perhaps the start of the object: nothing else can come first.
      assert.match(choice.message.content, /^[ \t\r\n]*(\{.*)?$/s);
    }
  });

  test('many json_object requests in one batch each give what they give alone', async () => {
    const bodies = [1, 2, 3, 4, 5, 6].map((seed) => ({
      messages: ask, response_format: jsonObject, temperature: seed % 2, seed, max_tokens: maxTokens,
    }));
    const alone = [];
    for (const b of bodies) alone.push((await chat(b)).json.choices[0].message.content);
    // A plain request rides along in the same batches.
    const plain = { messages: ask, max_tokens: 60, temperature: 0 };
    const plainAlone = (await chat(plain)).json.choices[0].message.content;
    const together = await Promise.all([...bodies.map((b) => chat(b)), chat(plain)]);
    for (let i = 0; i < bodies.length; ++i) {
      assert.equal(together[i].status, 200);
      assert.equal(together[i].json.choices[0].message.content, alone[i], `seed ${bodies[i].seed}`);
      assertObject(alone[i], `seed ${bodies[i].seed}`);
    }
    assert.equal(together[bodies.length].json.choices[0].message.content, plainAlone, 'the unconstrained one is unchanged');
  });
});
