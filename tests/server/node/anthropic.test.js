// Anthropic's Messages API (/v1/messages, /v1/messages/count_tokens) through a real
// `minfer serve` on the tiny Qwen3 model (real vocabulary and template, random weights) with the
// official @anthropic-ai/sdk client: create, stream with its helpers, a tool-use round trip,
// count_tokens, x-api-key auth and errors in Anthropic's shape.
//
// Random weights write gibberish, so replies that must hold given text are forced with a GBNF
// `grammar` (llama-server's extension, passed through); tool_choice any / tool makes the model's
// own calls, held to the tools' schemas by the tool-call grammar.
import assert from 'node:assert/strict';
import path from 'node:path';
import { before, describe, test } from 'node:test';

import Anthropic from '@anthropic-ai/sdk';
import Ajv from 'ajv';

import { minferBin, needs, postJson, suiteServer, testData } from './helpers.js';

const qwen3Path = path.join(testData, 'models', 'qwen3-qwentok-tiny-q8_0.gguf');
const skip = needs(minferBin, qwen3Path);

const key = 'anthropic-key';
const tools = [
  {
    name: 'get_weather',
    description: 'The weather in a city',
    input_schema: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] } }, required: ['city'] },
  },
  { name: 'get_time', input_schema: { type: 'object', properties: {} } },
];
const messages = [{ role: 'user', content: 'Weather in Paris?' }];

function literalGrammar(text) {
  return `root ::= ${JSON.stringify(text)}`;
}

describe('anthropic messages api', { skip }, () => {
  const ctx = suiteServer(['-np', '2', '--api-key', key], {}, qwen3Path);
  let url;
  let client;
  before(() => {
    url = ctx.url;
    client = new Anthropic({ baseURL: url, apiKey: key, maxRetries: 0 });
  });

  test('messages.create: a Message with text, stop reason and usage', async () => {
    const m = await client.messages.create({
      model: 'm', max_tokens: 6, temperature: 0, system: 'Be brief.', messages, metadata: { user_id: 'u' },
    });
    assert.match(m.id, /^msg_/);
    assert.equal(m.type, 'message');
    assert.equal(m.role, 'assistant');
    assert.equal(m.stop_reason, 'max_tokens');
    assert.equal(m.stop_sequence, null);
    assert.equal(m.content.length, 1);
    assert.equal(m.content[0].type, 'text');
    assert.ok(m.content[0].text.length > 0);
    assert.equal(m.usage.output_tokens, 6);
    const counted = await client.messages.countTokens({ model: 'm', system: 'Be brief.', messages });
    assert.equal(m.usage.input_tokens + m.usage.cache_read_input_tokens, counted.input_tokens);
  });

  test('stop_sequences end the reply with stop_reason stop_sequence', async () => {
    const m = await client.messages.create({
      model: 'm', max_tokens: 40, messages, grammar: literalGrammar('Hello there. STOP more'), stop_sequences: ['STOP'],
    });
    assert.equal(m.content[0].text, 'Hello there. ');
    assert.equal(m.stop_reason, 'stop_sequence');
    assert.equal(m.stop_sequence, 'STOP');
  });

  test('messages.stream: text events and finalMessage agree with create', async () => {
    const body = { model: 'm', max_tokens: 12, temperature: 0, messages };
    const whole = await client.messages.create(body);
    const stream = client.messages.stream(body);
    let text = '';
    stream.on('text', (delta) => {
      text += delta;
    });
    const final = await stream.finalMessage();
    assert.equal(text, whole.content[0].text);
    assert.deepEqual(final.content, whole.content);
    assert.equal(final.stop_reason, 'max_tokens');
    assert.equal(final.usage.output_tokens, 12);
    assert.match(final.id, /^msg_/);
  });

  test('the raw event sequence', async () => {
    const res = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ model: 'm', max_tokens: 3, stream: true, messages }),
    });
    assert.equal(res.status, 200);
    const names = [...(await res.text()).matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
    assert.deepEqual(names.slice(0, 3), ['message_start', 'ping', 'content_block_start']);
    assert.deepEqual(names.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);
    assert.ok(names.includes('content_block_delta'));
  });

  test('thinking enabled: a thinking block before the text, streamed as not', async () => {
    const body = {
      model: 'm', max_tokens: 60, messages, thinking: { type: 'enabled', budget_tokens: 1024 },
      grammar: literalGrammar('<think>\nHmm.\n</think>\n\nSunny.'),
    };
    const m = await client.messages.create(body);
    assert.deepEqual(m.content.map((b) => b.type), ['thinking', 'text']);
    assert.equal(m.content[0].thinking, 'Hmm.');
    assert.equal(m.content[1].text, 'Sunny.');
    let thinking = '';
    const stream = client.messages.stream(body);
    stream.on('thinking', (delta) => {
      thinking += delta;
    });
    const final = await stream.finalMessage();
    assert.equal(thinking, 'Hmm.');
    assert.deepEqual(final.content.map((b) => b.type), ['thinking', 'text']);
  });

  test('tool use round trip: tool_choice any and tool, then a tool_result turn', async () => {
    const ajv = new Ajv({ strict: false });
    const validators = Object.fromEntries(tools.map((t) => [t.name, ajv.compile(t.input_schema)]));
    const base = { model: 'm', max_tokens: 300, temperature: 1, messages, tools, seed: 1 };
    for (const tool_choice of [{ type: 'any', disable_parallel_tool_use: true }, { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true }]) {
      const m = await client.messages.create({ ...base, tool_choice });
      assert.equal(m.stop_reason, 'tool_use', JSON.stringify(m));
      const uses = m.content.filter((b) => b.type === 'tool_use');
      assert.equal(uses.length, 1);
      assert.ok(validators[uses[0].name], uses[0].name);
      assert.ok(validators[uses[0].name](uses[0].input), JSON.stringify(uses[0].input));
      if (tool_choice.type === 'tool') assert.equal(uses[0].name, 'get_weather');
      // Streamed: the SDK puts the input_json_delta pieces together into the same input.
      const streamed = await client.messages.stream({ ...base, tool_choice }).finalMessage();
      assert.deepEqual(streamed.content.filter((b) => b.type === 'tool_use').map((b) => [b.name, b.input]),
        uses.map((b) => [b.name, b.input]));
      assert.equal(streamed.stop_reason, 'tool_use');

      // The tool's result goes back as a tool_result block; the model answers in text.
      const next = await client.messages.create({
        model: 'm', max_tokens: 8, temperature: 0, tools,
        messages: [
          ...messages,
          { role: 'assistant', content: m.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: uses[0].id, content: '21 C, sunny' }] },
        ],
      });
      assert.equal(next.type, 'message');
      assert.ok(['end_turn', 'max_tokens', 'tool_use'].includes(next.stop_reason));
      assert.ok(next.usage.input_tokens + next.usage.cache_read_input_tokens > m.usage.input_tokens + m.usage.cache_read_input_tokens);
    }
  });

  test('the tool_result reaches the template', async () => {
    const convo = (result) => [
      ...messages,
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: result }] }] },
    ];
    const short = await client.messages.countTokens({ model: 'm', tools, messages: convo('sunny') });
    const long = await client.messages.countTokens({ model: 'm', tools, messages: convo('sunny and warm, with a light breeze') });
    assert.ok(long.input_tokens > short.input_tokens, `${long.input_tokens} > ${short.input_tokens}`);
  });

  test('x-api-key and bearer both authenticate; without a key: 401 in Anthropic shape', async () => {
    const viaHeader = new Anthropic({ baseURL: url, apiKey: null, authToken: null, defaultHeaders: { 'x-api-key': key }, maxRetries: 0 });
    const m = await viaHeader.messages.create({ model: 'm', max_tokens: 2, messages });
    assert.equal(m.type, 'message');
    const none = await postJson(`${url}/v1/messages`, { model: 'm', max_tokens: 2, messages });
    assert.equal(none.status, 401);
    assert.equal(none.json.type, 'error');
    assert.equal(none.json.error.type, 'authentication_error');
    const wrong = new Anthropic({ baseURL: url, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(wrong.messages.create({ model: 'm', max_tokens: 2, messages }), (e) => {
      assert.equal(e.status, 401);
      assert.equal(e.error?.error?.type, 'authentication_error');
      return true;
    });
  });

  test('bad requests are 400 invalid_request_error in Anthropic shape', async () => {
    const cases = [
      { model: 'm', messages },  // no max_tokens
      { model: 'm', max_tokens: 4, messages: [{ role: 'system', content: 'x' }] },
      { model: 'm', max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }] },
      { model: 'm', max_tokens: 4, messages, tools, tool_choice: { type: 'tool', name: 'nope' } },
      { model: 'm', max_tokens: 4, messages, tool_choice: { type: 'sometimes' } },
      { model: 'm', max_tokens: 4, messages, temperature: 'hot' },
    ];
    for (const body of cases) {
      const r = await postJson(`${url}/v1/messages`, body, { 'x-api-key': key });
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.json.type, 'error', r.text);
      assert.equal(r.json.error.type, 'invalid_request_error', r.text);
      assert.ok(r.json.error.message.length > 0);
    }
    await assert.rejects(client.messages.create({ model: 'm', messages }), (e) => e.status === 400);
    const notJson = await postJson(`${url}/v1/messages`, '{', { 'x-api-key': key });
    assert.equal(notJson.status, 400);
    assert.equal(notJson.json.error.type, 'invalid_request_error');
  });
});
