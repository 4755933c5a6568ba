// Agents under real limits (issue 48), on the tiny Qwen3 model (real vocabulary and template,
// random weights: it never wants to stop, which is what exposes limits): the requests agent
// frameworks send, with token budgets that cut replies short.
//
//  - A forced call under a budget either arrives whole, its arguments valid against the schema
//    (ajv), or is absent with finish_reason "length"; streamed, the same calls.
//  - No tool-call markup ever reaches text: OpenAI content, Anthropic text blocks, Responses
//    output_text.
//  - json_schema replies over many seeds: whitespace runs and integers within the grammar's bounds.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';

import Anthropic from '@anthropic-ai/sdk';
import Ajv from 'ajv';

import { minferBin, needs, suiteServer, testData } from './helpers.js';

const qwen3Path = path.join(testData, 'models', 'qwen3-qwentok-tiny-q8_0.gguf');
const skip = needs(minferBin, qwen3Path);

const addSchema = {
  type: 'object',
  properties: { a: { type: 'integer' }, b: { type: 'integer' } },
  required: ['a', 'b'],
  additionalProperties: false,
};
const tools = [
  { type: 'function', function: { name: 'add', description: 'a + b', parameters: addSchema } },
  {
    type: 'function',
    function: {
      name: 'note',
      parameters: { type: 'object', properties: { text: { type: 'string' }, weight: { type: 'number' } }, required: ['text'] },
    },
  },
];
const messages = [{ role: 'user', content: 'What is 2 + 3?' }];
// Any piece of a call's markup: the opening and closing tags or a cut-off beginning of them.
const markup = /<\/?tool_c|<tool_?$|<\|python_tag|<\|tool/;

const ajv = new Ajv({ strict: false });
const validators = Object.fromEntries(tools.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));

// Every call whole and valid, or none with finish_reason length; no markup in the content.
function checkChoice(choice, what) {
  const calls = choice.message.tool_calls ?? [];
  for (const call of calls) {
    const validate = validators[call.function.name];
    assert.ok(validate, `${what}: unknown function ${call.function.name}`);
    let args;
    assert.doesNotThrow(() => { args = JSON.parse(call.function.arguments); }, `${what}: ${call.function.arguments}`);
    assert.ok(validate(args), `${what}: ${call.function.arguments}`);
  }
  if (calls.length === 0) assert.equal(choice.finish_reason, 'length', what);
  assert.doesNotMatch(choice.message.content ?? '', markup, what);
  return calls;
}

describe('agents under real limits', { skip }, () => {
  const ctx = suiteServer(['-np', '2'], {}, qwen3Path);

  test('a named tool_choice under max_tokens 300 and 20: whole valid calls or none, streamed alike', async () => {
    let sawCall = false;
    let sawCut = false;
    for (const maxTokens of [300, 20, 12]) {
      for (const seed of [1, 2, 3]) {
        const body = {
          model: 'm', messages, tools, tool_choice: { type: 'function', function: { name: 'add' } },
          max_tokens: maxTokens, temperature: 1, seed,
        };
        const what = `max_tokens ${maxTokens} seed ${seed}`;
        const whole = await ctx.client.chat.completions.create(body);
        const calls = checkChoice(whole.choices[0], what);
        sawCall ||= calls.length > 0;
        sawCut ||= whole.choices[0].finish_reason === 'length';
        for (const call of calls) assert.equal(call.function.name, 'add');
        const streamed = await ctx.client.chat.completions.stream(body).finalChatCompletion();
        checkChoice(streamed.choices[0], `${what} (streamed)`);
        const shape = (m) => (m.tool_calls ?? []).map((c) => [c.function.name, c.function.arguments]);
        assert.deepEqual(shape(streamed.choices[0].message), shape(whole.choices[0].message), what);
        assert.equal(streamed.choices[0].finish_reason, whole.choices[0].finish_reason, what);
      }
    }
    assert.ok(sawCall, 'some budget held a whole call');
    assert.ok(sawCut, 'some budget cut the reply');
  });

  // The call's opening is written in the tokenizer's own tokens (11 here) and whitespace in
  // arguments is at most one space, so a call of small numbers fits in 40 tokens. (Unbounded
  // integers would not: this model writes 15-digit numbers, a token per digit.)
  test('a forced call opens with the tokenizer\'s own tokens: 40 tokens hold one call', async () => {
    const small = { type: 'integer', minimum: 0, maximum: 1000 };
    const smallAdd = { ...addSchema, properties: { a: small, b: small } };
    const smallTools = [{ type: 'function', function: { name: 'add', parameters: smallAdd } }];
    const validate = ajv.compile(smallAdd);
    for (const seed of [1, 2, 3, 4, 5]) {
      const r = await ctx.client.chat.completions.create({
        model: 'm', messages, tools: smallTools, tool_choice: { type: 'function', function: { name: 'add' } },
        parallel_tool_calls: false, max_tokens: 40, temperature: 1, seed,
      });
      const calls = r.choices[0].message.tool_calls ?? [];
      assert.equal(calls.length, 1, JSON.stringify(r.choices[0]));
      assert.ok(validate(JSON.parse(calls[0].function.arguments)), calls[0].function.arguments);
      assert.equal(r.choices[0].finish_reason, 'tool_calls');
    }
  });

  test('tool_choice required, auto and none: no markup in content at any budget', async () => {
    for (const toolChoice of ['required', 'auto', 'none']) {
      for (const maxTokens of [7, 15, 60]) {
        for (const seed of [1, 2]) {
          const r = await ctx.client.chat.completions.create({
            model: 'm', messages, tools, tool_choice: toolChoice, max_tokens: maxTokens, temperature: 1, seed,
          });
          const what = `${toolChoice} max_tokens ${maxTokens} seed ${seed}`;
          const calls = r.choices[0].message.tool_calls ?? [];
          if (toolChoice === 'none') assert.equal(calls.length, 0, what);
          if (toolChoice !== 'auto') checkChoice(r.choices[0], what);
          assert.doesNotMatch(r.choices[0].message.content ?? '', markup, what);
        }
      }
    }
  });

  test('Anthropic tool_choice any and Responses required: no markup in text or output_text', async () => {
    const anthropic = new Anthropic({ baseURL: ctx.url, apiKey: 'k', maxRetries: 0 });
    const anthropicTools = tools.map((t) => ({ name: t.function.name, input_schema: t.function.parameters }));
    const responsesTools = tools.map((t) => ({ type: 'function', name: t.function.name, parameters: t.function.parameters }));
    for (const maxTokens of [9, 20, 80]) {
      for (const seed of [1, 2]) {
        const what = `max_tokens ${maxTokens} seed ${seed}`;
        const m = await anthropic.messages.create({
          model: 'm', max_tokens: maxTokens, messages, tools: anthropicTools, tool_choice: { type: 'any' }, temperature: 1, seed,
        });
        for (const block of m.content) {
          if (block.type === 'text') assert.doesNotMatch(block.text, markup, what);
          if (block.type === 'tool_use') assert.ok(validators[block.name](block.input), `${what}: ${JSON.stringify(block.input)}`);
        }
        if (!m.content.some((b) => b.type === 'tool_use')) assert.equal(m.stop_reason, 'max_tokens', what);
        const r = await ctx.client.responses.create({
          model: 'm', input: 'What is 2 + 3?', tools: responsesTools, tool_choice: 'required',
          max_output_tokens: maxTokens, temperature: 1, seed,
        });
        for (const item of r.output) {
          if (item.type === 'message') {
            for (const part of item.content) assert.doesNotMatch(part.text ?? '', markup, what);
          }
          if (item.type === 'function_call') {
            assert.ok(validators[item.name](JSON.parse(item.arguments)), `${what}: ${item.arguments}`);
          }
        }
      }
    }
  });

  test('100 json_schema replies: whitespace runs of at most 22 bytes, integers of at most 16 digits', async () => {
    const schema = {
      type: 'object',
      properties: {
        count: { type: 'integer' },
        ratio: { type: 'number' },
        items: { type: 'array', items: { type: 'integer' } },
        nested: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] },
      },
      required: ['count', 'ratio', 'items', 'nested'],
    };
    const validate = ajv.compile(schema);
    let complete = 0;
    for (let seed = 1; seed <= 100; seed++) {
      const r = await ctx.client.chat.completions.create({
        model: 'm', messages, max_tokens: 120, temperature: 1, seed,
        response_format: { type: 'json_schema', json_schema: { name: 'r', schema } },
      });
      const text = r.choices[0].message.content;
      const what = `seed ${seed}: ${JSON.stringify(text)}`;
      for (const run of text.match(/[ \t\n\r]+/g) ?? []) assert.ok(run.length <= 22, what);
      // Digits of a number's integer part (outside strings there are no others here).
      for (const digits of text.match(/\d+/g) ?? []) assert.ok(digits.length <= 16, what);
      if (r.choices[0].finish_reason === 'stop') {
        const doc = JSON.parse(text);
        assert.ok(validate(doc), what);
        complete += 1;
      }
    }
    assert.ok(complete > 0, 'some replies closed within the budget');
  });
});
