// Tool calls and reasoning through a real `minfer serve` on the tiny Qwen3 model (real vocabulary
// and template, random weights) with the official client.
//
// Random weights write gibberish, so the replies that must hold a given call or <think> block are
// forced with a GBNF `grammar` (llama-server's request field); tool_choice "required" makes the
// model's own calls, held to the tools' schemas by the tool-call grammar, which the SDK's tool
// runner then runs. The parser itself is pinned by the C++ tests
// (tests/engine/reply_parser_test.cpp, reply_pipeline_test.cpp, tests/server/tool_reply_test.cpp,
// tests/engine/tool_grammar_test.cpp).
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';

import Ajv from 'ajv';

import { minferBin, needs, postJson, readSse, suiteServer, testData } from './helpers.js';

const qwen3Path = path.join(testData, 'models', 'qwen3-qwentok-tiny-q8_0.gguf');
const skip = needs(minferBin, qwen3Path);

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
];
const messages = [{ role: 'user', content: 'Weather in Paris?' }];

// A GBNF grammar whose only sentence is `text`.
function literalGrammar(text) {
  return `root ::= ${JSON.stringify(text)}`;
}

const callReply =
  '<think>\nThe user wants the weather.\n</think>\n\nLet me check.\n<tool_call>\n' +
  '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n' +
  '{"name": "get_time", "arguments": {}}\n</tool_call>';

describe('tool calls and reasoning', { skip }, () => {
  const ctx = suiteServer(['-np', '2'], {}, qwen3Path);
  const chat = (body) => postJson(`${ctx.url}/v1/chat/completions`, body);

  test('bad tool_choice, unknown function, bad tools and reasoning_format are 400s', async () => {
    const cases = [
      [{ tools, tool_choice: 'sometimes' }, 'tool_choice'],
      [{ tools, tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice'],
      [{ tool_choice: 'required' }, 'tool_choice'],
      [{ tools, parallel_tool_calls: 'yes' }, 'parallel_tool_calls'],
      [{ tools: [{ type: 'function' }] }, 'tools[0]'],
      [{ reasoning_format: 'maybe' }, 'reasoning_format'],
    ];
    for (const [extra, param] of cases) {
      const r = await chat({ messages, max_tokens: 2, ...extra });
      assert.equal(r.status, 400, JSON.stringify(extra));
      assert.equal(r.json.error.param, param, r.text);
    }
  });

  test('a request with tools answers with the usual shape, streamed and not', async () => {
    const body = { model: 'm', messages, tools, tool_choice: 'auto', max_tokens: 8, temperature: 0 };
    const whole = await ctx.client.chat.completions.create(body);
    assert.ok(['stop', 'length', 'tool_calls'].includes(whole.choices[0].finish_reason));
    const final = await ctx.client.chat.completions.stream(body).finalChatCompletion();
    assert.equal(final.choices[0].finish_reason, whole.choices[0].finish_reason);
    assert.equal(final.choices[0].message.content ?? '', whole.choices[0].message.content ?? '');
  });

  test('a forced Hermes reply gives tool_calls and reasoning_content, streamed as not', async () => {
    const body = { model: 'm', messages, tools, grammar: literalGrammar(callReply), max_tokens: 200, temperature: 0 };
    const whole = await ctx.client.chat.completions.create(body);
    const choice = whole.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.content, 'Let me check.');
    assert.equal(choice.message.reasoning_content, 'The user wants the weather.');
    const calls = choice.message.tool_calls;
    assert.equal(calls.length, 2);
    assert.match(calls[0].id, /^call_[A-Za-z0-9]+$/);
    assert.equal(calls[0].type, 'function');
    assert.equal(calls[0].function.name, 'get_weather');
    assert.deepEqual(JSON.parse(calls[0].function.arguments), { city: 'Paris' });
    assert.equal(calls[1].function.name, 'get_time');

    const final = await ctx.client.chat.completions.stream(body).finalChatCompletion();
    const streamed = final.choices[0];
    assert.equal(streamed.finish_reason, 'tool_calls');
    assert.equal(streamed.message.content, 'Let me check.');
    const strip = (cs) => cs.map((c) => ({ type: c.type, name: c.function.name, arguments: c.function.arguments }));
    assert.deepEqual(strip(streamed.message.tool_calls), strip(calls));

    // The raw chunks: a call's first piece has index, id, type and name, then argument fragments.
    const res = await fetch(`${ctx.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true }),
    });
    const { events, done } = await readSse(res);
    assert.ok(done);
    let reasoning = '';
    const pieces = [];
    for (const e of events) {
      const delta = e.choices[0]?.delta ?? {};
      reasoning += delta.reasoning_content ?? '';
      for (const p of delta.tool_calls ?? []) pieces.push(p);
    }
    assert.equal(reasoning, 'The user wants the weather.');
    assert.equal(pieces[0].index, 0);
    assert.match(pieces[0].id, /^call_/);
    assert.equal(pieces[0].function.name, 'get_weather');
    assert.equal(pieces[0].function.arguments, '');
    const args0 = pieces.filter((p) => p.index === 0).map((p) => p.function.arguments).join('');
    assert.equal(args0, calls[0].function.arguments);
  });

  test('reasoning_format none leaves <think> in content; without tools a call is content', async () => {
    const reply = '<think>\nhm\n</think>\n\nHello.';
    const split = await chat({ messages, grammar: literalGrammar(reply), max_tokens: 50, temperature: 0 });
    assert.equal(split.json.choices[0].message.reasoning_content, 'hm');
    assert.equal(split.json.choices[0].message.content, 'Hello.');
    const raw = await chat({ messages, grammar: literalGrammar(reply), reasoning_format: 'none', max_tokens: 50, temperature: 0 });
    assert.equal(raw.json.choices[0].message.content, reply);
    assert.equal(raw.json.choices[0].message.reasoning_content, undefined);
    const noTools = await chat({ messages, grammar: literalGrammar(callReply), reasoning_format: 'none', max_tokens: 200, temperature: 0 });
    assert.equal(noTools.json.choices[0].message.content, callReply);
    assert.equal(noTools.json.choices[0].finish_reason, 'stop');
  });

  // parallel_tool_calls false: random weights left free keep adding calls until max_tokens.
  test('tool_choice required: a call that follows the schemas, streamed as not', async () => {
    const ajv = new Ajv({ strict: false });
    const validators = Object.fromEntries(tools.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));
    for (const seed of [1, 2, 3]) {
      const body = {
        model: 'm', messages, tools, tool_choice: 'required', parallel_tool_calls: false, max_tokens: 300, temperature: 1, seed,
      };
      const done = await ctx.client.chat.completions.create(body);
      const choice = done.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
      assert.equal(choice.message.tool_calls.length, 1);
      for (const call of choice.message.tool_calls) {
        assert.match(call.id, /^call_/);
        const validate = validators[call.function.name];
        assert.ok(validate, call.function.name);
        assert.ok(validate(JSON.parse(call.function.arguments)), call.function.arguments);
      }
      const streamed = await ctx.client.chat.completions.stream(body).finalChatCompletion();
      const shape = (m) => m.tool_calls.map((c) => [c.function.name, c.function.arguments]);
      assert.deepEqual(shape(streamed.choices[0].message), shape(choice.message));
      assert.equal(streamed.choices[0].finish_reason, 'tool_calls');
    }
  });

  test('a named tool_choice and parallel_tool_calls false give exactly one call of it', async () => {
    const done = await ctx.client.chat.completions.create({
      model: 'm', messages, tools, tool_choice: { type: 'function', function: { name: 'get_time' } },
      parallel_tool_calls: false, max_tokens: 300, temperature: 1, seed: 4,
    });
    const calls = done.choices[0].message.tool_calls;
    assert.equal(calls.length, 1);
    assert.equal(calls[0].function.name, 'get_time');
  });

  test('the SDK tool runner completes a two-tool round trip: required, then auto', async () => {
    const ran = [];
    const runnable = tools.map((t) => ({
      type: 'function',
      function: {
        name: t.function.name,
        parameters: t.function.parameters,
        parse: JSON.parse,
        function: (args) => {
          ran.push([t.function.name, args]);
          return t.function.name === 'get_weather' ? { city: args.city, celsius: 21 } : '12:00';
        },
      },
    }));
    // Round 1, required: two completions, each with one call the runner runs and answers.
    const first = ctx.client.chat.completions.runTools({
      model: 'm', messages, tools: runnable, tool_choice: 'required', parallel_tool_calls: false,
      max_tokens: 300, temperature: 1, seed: 5,
    }, { maxChatCompletions: 2 });
    await first.done();
    assert.equal(ran.length, 2, JSON.stringify(ran));
    const history = first.messages;
    assert.ok(history.some((m) => m.role === 'tool'));
    assert.ok(history.some((m) => m.role === 'assistant' && m.tool_calls?.length));
    // Round 2, auto: the conversation with the tool results renders through the template and
    // the model answers. The runner refuses a reply cut by max_tokens, and random weights do not
    // end on their own, so <|im_end|> gets a bias that ends the answer.
    const end = await postJson(`${ctx.url}/tokenize`, { content: '<|im_end|>', parse_special: true });
    assert.equal(end.json.tokens.length, 1);
    const second = ctx.client.chat.completions.runTools({
      model: 'm', messages: history, tools: runnable, tool_choice: 'auto', max_tokens: 24, temperature: 0,
      logit_bias: { [end.json.tokens[0]]: 100 },
    }, { maxChatCompletions: 3 });
    const final = await second.finalChatCompletion();
    assert.equal(final.choices[0].finish_reason, 'stop');
    assert.ok(second.messages.length > history.length);
  });
});
