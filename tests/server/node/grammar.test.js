// The request field `grammar` (GBNF, as llama-server takes it) constrains the reply, chat and
// completions, streamed and not, alone and many at once; a grammar that does not parse is a 400
// naming its line and column; `grammar` with a JSON response_format is a 400; `serve --grammar`
// is the default for requests that name none. The model: tiny random weights with the real Qwen
// tokenizer (151,936 tokens), whose free text is noise, so only the grammar shapes the reply.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { postJson, readSse, skipReason, suiteServer } from './helpers.js';

const yesNo = 'root ::= "yes" | "no"';
// A name, a number with a unit, and a list: classes, repetition bounds, alternatives, UTF-8.
const record = String.raw`root ::= name ": " [1-9] [0-9]{0,2} (" kg" | " g") " [" item ("," item){0,3} "]"
name ::= [A-Z] [a-zé]{2,8}
item ::= "\"" [a-z]{1,6} "\""`;
const recordRe = /^[A-Z][a-zé]{2,8}: [1-9][0-9]{0,2} (kg|g) \["[a-z]{1,6}"(,"[a-z]{1,6}"){0,3}\]$/u;
const ask = [{ role: 'user', content: 'Answer.' }];

describe('grammar', { skip: skipReason }, () => {
  const ctx = suiteServer(['-np', '4']);
  const chat = (body) => postJson(`${ctx.url}/v1/chat/completions`, body);

  test('chat replies are sentences of the grammar, greedy and sampled', async () => {
    for (const temperature of [0, 1]) {
      for (const seed of [1, 2, 3]) {
        const r = await chat({ messages: ask, grammar: yesNo, temperature, seed, max_tokens: 20 });
        assert.equal(r.status, 200, r.text);
        const choice = r.json.choices[0];
        assert.ok(['yes', 'no'].includes(choice.message.content), choice.message.content);
        assert.equal(choice.finish_reason, 'stop');
      }
      for (const seed of [4, 5]) {
        const r = await chat({ messages: ask, grammar: record, temperature, seed, max_tokens: 200 });
        assert.equal(r.status, 200, r.text);
        assert.match(r.json.choices[0].message.content, recordRe);
        assert.equal(r.json.choices[0].finish_reason, 'stop');
      }
    }
  });

  test('completions, streamed: the deltas join to the reply not streamed', async () => {
    const body = { prompt: 'Weight:', grammar: record, temperature: 1, seed: 9, max_tokens: 200 };
    const plain = await postJson(`${ctx.url}/v1/completions`, body);
    assert.equal(plain.status, 200, plain.text);
    assert.match(plain.json.choices[0].text, recordRe);
    const res = await fetch(`${ctx.url}/v1/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true }),
    });
    assert.equal(res.status, 200);
    const { events, done } = await readSse(res);
    assert.ok(done);
    const text = events.map((e) => e.choices[0]?.text ?? '').join('');
    assert.equal(text, plain.json.choices[0].text);
  });

  test('8 concurrent requests with the same grammar equal their solo answers', async () => {
    const bodies = [1, 2, 3, 4, 5, 6, 7, 8].map((seed) => ({ messages: ask, grammar: record, temperature: 1, seed, max_tokens: 200 }));
    const alone = [];
    for (const b of bodies) alone.push((await chat(b)).json.choices[0].message.content);
    const together = await Promise.all(bodies.map((b) => chat(b)));
    for (let i = 0; i < bodies.length; ++i) {
      assert.equal(together[i].status, 200);
      assert.equal(together[i].json.choices[0].message.content, alone[i], `seed ${bodies[i].seed}`);
      assert.match(alone[i], recordRe);
    }
  });

  test('a grammar that does not parse is a 400 naming line and column', async () => {
    const r = await chat({ messages: ask, grammar: 'root ::= "a"\nx ::= [a-z' });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.param, 'grammar');
    assert.match(r.json.error.message, /gbnf:2:11: expected '\]' to close the character class/);
    const undefinedRule = await chat({ messages: ask, grammar: 'root ::= answer' });
    assert.equal(undefinedRule.status, 400);
    assert.match(undefinedRule.json.error.message, /gbnf:1:10: undefined rule 'answer'/);
    const wrongType = await chat({ messages: ask, grammar: 42 });
    assert.equal(wrongType.status, 400);
  });

  test('grammar with a JSON response_format is a 400', async () => {
    for (const type of ['json_object', 'json_schema']) {
      const r = await chat({ messages: ask, grammar: yesNo, response_format: { type } });
      assert.equal(r.status, 400, type);
      assert.equal(r.json.error.param, 'grammar');
      assert.match(r.json.error.message, /cannot be used together/);
    }
  });
});

describe('serve --grammar', { skip: skipReason }, () => {
  const ctx = suiteServer(['--grammar', yesNo]);

  test('is the default for requests that name no grammar; a request grammar wins', async () => {
    const r = await postJson(`${ctx.url}/v1/chat/completions`, { messages: ask, temperature: 1, seed: 3, max_tokens: 20 });
    assert.equal(r.status, 200, r.text);
    assert.ok(['yes', 'no'].includes(r.json.choices[0].message.content), r.json.choices[0].message.content);
    const own = await postJson(`${ctx.url}/v1/chat/completions`, { messages: ask, grammar: 'root ::= "maybe"', max_tokens: 20 });
    assert.equal(own.json.choices[0].message.content, 'maybe');
    const json = await postJson(`${ctx.url}/v1/chat/completions`, { messages: ask, response_format: { type: 'json_object' }, max_tokens: 30 });
    assert.equal(json.status, 200, json.text);
    assert.ok(!['yes', 'no'].includes(json.json.choices[0].message.content));
  });
});
