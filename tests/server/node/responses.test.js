// OpenAI's Responses API (/v1/responses, stateless) through a real `minfer serve` on the tiny
// Qwen3 model (real vocabulary and template, random weights) with the official openai client:
// plain, streamed (the output_text deltas make the final text), a function tool call, a
// text.format json_schema, and what a stateless server refuses.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';

import Ajv from 'ajv';

import { minferBin, needs, postJson, suiteServer, testData } from './helpers.js';

const qwen3Path = path.join(testData, 'models', 'qwen3-qwentok-tiny-q8_0.gguf');
const skip = needs(minferBin, qwen3Path);

const tools = [
  {
    type: 'function',
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] } }, required: ['city'] },
  },
  { type: 'function', name: 'get_time', parameters: { type: 'object', properties: {} } },
];

describe('openai responses api', { skip }, () => {
  const ctx = suiteServer(['-np', '2'], {}, qwen3Path);

  test('responses.create: a message with output_text and usage', async () => {
    const r = await ctx.client.responses.create({
      model: 'm', instructions: 'Be brief.', input: 'Hello!', max_output_tokens: 6, temperature: 0, store: false,
    });
    assert.match(r.id, /^resp_/);
    assert.equal(r.object, 'response');
    assert.equal(r.status, 'incomplete');
    assert.equal(r.incomplete_details.reason, 'max_output_tokens');
    assert.equal(r.output.length, 1);
    assert.equal(r.output[0].type, 'message');
    assert.equal(r.output[0].content[0].type, 'output_text');
    assert.ok(r.output_text.length > 0);
    assert.equal(r.usage.output_tokens, 6);
    assert.equal(r.usage.total_tokens, r.usage.input_tokens + 6);

    const done = await ctx.client.responses.create({
      model: 'm', input: [{ role: 'user', content: [{ type: 'input_text', text: 'Hello!' }] }],
      max_output_tokens: 40, grammar: 'root ::= "Hi there."',
    });
    assert.equal(done.status, 'completed');
    assert.equal(done.output_text, 'Hi there.');
  });

  test('streamed: the output_text deltas make the final text, events in order', async () => {
    const body = { model: 'm', input: 'Hello!', max_output_tokens: 12, temperature: 0 };
    const whole = await ctx.client.responses.create(body);
    const stream = await ctx.client.responses.create({ ...body, stream: true });
    let text = '';
    const types = [];
    const seqs = [];
    let completed = null;
    for await (const event of stream) {
      types.push(event.type);
      seqs.push(event.sequence_number);
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.incomplete' || event.type === 'response.completed') completed = event.response;
    }
    assert.equal(text, whole.output_text);
    assert.deepEqual(seqs, seqs.map((_, i) => i));
    assert.deepEqual(types.slice(0, 4),
      ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    assert.deepEqual(types.slice(-4), ['response.output_text.done', 'response.content_part.done',
      'response.output_item.done', 'response.incomplete']);
    assert.equal(completed.output[0].content[0].text, text);
    assert.equal(completed.usage.output_tokens, 12);

    // The SDK's stream helper puts the same response together (its finalResponse has no
    // output_text convenience field: the text is in the message item).
    const final = await ctx.client.responses.stream(body).finalResponse();
    assert.equal(final.output[0].content[0].text, whole.output_text);
  });

  test('a function call with tool_choice required, streamed as not; then its output', async () => {
    const ajv = new Ajv({ strict: false });
    const validators = Object.fromEntries(tools.map((t) => [t.name, ajv.compile(t.parameters)]));
    const body = {
      model: 'm', input: 'Weather in Paris?', tools, tool_choice: 'required', parallel_tool_calls: false,
      max_output_tokens: 300, temperature: 1, seed: 1,
    };
    const r = await ctx.client.responses.create(body);
    assert.equal(r.status, 'completed', JSON.stringify(r));
    const calls = r.output.filter((o) => o.type === 'function_call');
    assert.equal(calls.length, 1);
    assert.match(calls[0].call_id, /^call_/);
    assert.ok(validators[calls[0].name], calls[0].name);
    assert.ok(validators[calls[0].name](JSON.parse(calls[0].arguments)), calls[0].arguments);

    const stream = await ctx.client.responses.create({ ...body, stream: true });
    let args = '';
    let doneArgs = null;
    for await (const event of stream) {
      if (event.type === 'response.function_call_arguments.delta') args += event.delta;
      if (event.type === 'response.function_call_arguments.done') doneArgs = event.arguments;
    }
    assert.equal(args, calls[0].arguments);
    assert.equal(doneArgs, calls[0].arguments);

    const named = await ctx.client.responses.create({ ...body, tool_choice: { type: 'function', name: 'get_time' } });
    assert.deepEqual(named.output.filter((o) => o.type === 'function_call').map((o) => o.name), ['get_time']);

    // The call and its output as input items: the model answers in text.
    const next = await ctx.client.responses.create({
      model: 'm', tools, max_output_tokens: 6, temperature: 0,
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        { type: 'function_call', call_id: calls[0].call_id, name: calls[0].name, arguments: calls[0].arguments },
        { type: 'function_call_output', call_id: calls[0].call_id, output: '21 C, sunny' },
      ],
    });
    assert.ok(next.usage.input_tokens > r.usage.input_tokens);
  });

  test('text.format json_schema: the output parses and matches the schema', async () => {
    const schema = {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 8 }, age: { type: 'integer' } },
      required: ['name', 'age'],
      additionalProperties: false,
    };
    const validate = new Ajv({ strict: false }).compile(schema);
    const r = await ctx.client.responses.create({
      model: 'm', input: 'A person as JSON.', max_output_tokens: 200, temperature: 1, seed: 3,
      text: { format: { type: 'json_schema', name: 'person', schema, strict: true } },
    });
    assert.equal(r.status, 'completed', r.output_text);
    const value = JSON.parse(r.output_text);
    assert.ok(validate(value), r.output_text);
  });

  test('store, previous_response_id and bad fields are 400s naming the field', async () => {
    const cases = [
      [{ input: 'x', store: true }, 'store'],
      [{ input: 'x', previous_response_id: 'resp_1' }, 'previous_response_id'],
      [{}, 'input'],
      [{ input: [{ type: 'input_image' }] }, 'input[0].type'],
      [{ input: 'x', tools: [{ type: 'web_search' }] }, 'tools[0]'],
      [{ input: 'x', reasoning: { effort: 'extreme' } }, 'reasoning.effort'],
      [{ input: 'x', text: { format: { type: 'yaml' } } }, 'text.format.type'],
      [{ input: 'x', tool_choice: 'required' }, 'tool_choice'],
    ];
    for (const [body, param] of cases) {
      const r = await postJson(`${ctx.url}/v1/responses`, { model: 'm', ...body });
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.json.error.param, param, r.text);
    }
  });
});
