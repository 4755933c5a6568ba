// What the chat-format tests (qwen35_chat.test.js, channel_chat.test.js) share: the tools they
// call, typed and bounded (so a random model's forced calls end within a few hundred tokens), with
// an enum, an array and a tool without parameters; a grammar that forces a given reply; the
// served model (a tiny random-weight model with the Qwen vocabulary and a real chat template);
// and the checks every format must pass through the OpenAI, Anthropic and Responses APIs.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';

import Anthropic from '@anthropic-ai/sdk';
import Ajv from 'ajv';

import { minferBin, suiteServer, testData } from './helpers.js';

export const vocabPath = path.join(testData, 'models', 'qwen3-vocab.gguf');
export const messages = [{ role: 'user', content: 'Weather in Paris?' }];
// What every format's forced call reply (each test's callReply: reasoning, content, then calls to
// get_weather and get_time in the format's syntax) splits into.
export const callReplySplit = {
  finish: 'tool_calls', reasoning: 'The user wants the weather.', content: 'Let me check.',
  calls: [['get_weather', { city: 'Saint-Étienne', days: 3, hourly: true }], ['get_time', {}]],
};

export const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', maxLength: 24 },
          days: { type: 'integer', minimum: 1, maximum: 7 },
          hourly: { type: 'boolean' },
        },
        required: ['city', 'days'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'plot',
      description: 'Plot points',
      parameters: {
        type: 'object',
        properties: { points: { type: 'array', items: { type: 'number' }, maxItems: 3 }, title: { type: 'string', enum: ['a', 'b'] } },
        required: ['points', 'title'],
        additionalProperties: false,
      },
    },
  },
  { type: 'function', function: { name: 'get_time', description: 'The time', parameters: { type: 'object', properties: {} } } },
];

// A GBNF grammar whose only sentence is `text`: the reply the model is made to write.
export const literalGrammar = (text) => `root ::= ${JSON.stringify(text)}`;

// Inside a describe(): `minfer make-model` builds a tiny `arch` model with the Qwen vocabulary and
// the chat template at templatePath, served with two slots (suiteServer) before the tests, and
// removed after them. Returns suiteServer's object (`url`, `client`).
export function chatModelServer(arch, templatePath) {
  let dir;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), `minfer-${arch}-chat-`));
    execFileSync(minferBin, [
      'make-model', '--arch', arch, '--preset', 'tiny', '--type', 'q8_0', '--tokenizer-from', vocabPath,
      '--chat-template', templatePath, '-t', '2', '-o', path.join(dir, 'chat.gguf'),
    ], { stdio: 'pipe' });
  });
  const ctx = suiteServer(['-np', '2'], {}, () => path.join(dir, 'chat.gguf'));
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return ctx;
}

const ajv = new Ajv({ strict: false });
const validators = Object.fromEntries(tools.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));

// Each call names one of the tools and its arguments validate against that tool's schema.
export function assertValidCalls(calls) {
  for (const c of calls) {
    const valid = validators[c.function.name]?.(JSON.parse(c.function.arguments));
    assert.ok(valid, `${c.function.name}: ${c.function.arguments}`);
  }
}

// The reply forced by `body` (its grammar) splits into callReplySplit, whole and streamed, with no
// markup in any raw delta.
export async function assertSplitReply(client, body) {
  const expected = callReplySplit;
  // What a choice says: its finish, reasoning, content, and each call's name and arguments.
  const summary = ({ finish_reason: finish, message: m }) => ({
    finish, reasoning: m.reasoning_content, content: m.content,
    calls: m.tool_calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]),
  });
  const whole = (await client.chat.completions.create(body)).choices[0];
  assert.deepEqual(summary(whole), expected);
  assert.ok(whole.message.tool_calls.every((c) => /^call_[A-Za-z0-9]+$/.test(c.id)));
  // The SDK's stream helper keeps the last reasoning_content delta, not their sum (the raw
  // chunks below carry the whole reasoning).
  const streamed = (await client.chat.completions.stream(body).finalChatCompletion()).choices[0];
  assert.deepEqual({ ...summary(streamed), reasoning: expected.reasoning }, expected);
  assert.deepEqual(streamed.message.tool_calls.map((c) => c.function.arguments),
    whole.message.tool_calls.map((c) => c.function.arguments));
  let content = '';
  let reasoning = '';
  for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) {
    content += chunk.choices[0]?.delta?.content ?? '';
    reasoning += chunk.choices[0]?.delta?.reasoning_content ?? '';
  }
  assert.equal(content, expected.content);
  assert.equal(reasoning, expected.reasoning);
}

// tool_choice required (three seeds) and named: the model's own call, one, whose arguments
// validate, with no text around it; streamed the same.
export async function assertForcedCalls(client) {
  const named = (name) => ({ type: 'function', function: { name } });
  const runs = [['required', 1], ['required', 2], ['required', 3], [named('get_weather'), 4], [named('plot'), 4]];
  for (const [tool_choice, seed] of runs) {
    const body = { model: 'm', messages, tools, tool_choice, parallel_tool_calls: false, max_tokens: 300, temperature: 1, seed };
    const { finish_reason: finish, message } = (await client.chat.completions.create(body)).choices[0];
    assert.equal(finish, 'tool_calls', JSON.stringify(message));
    assert.equal(message.tool_calls.length, 1);
    if (tool_choice.function) assert.equal(message.tool_calls[0].function.name, tool_choice.function.name);
    assertValidCalls(message.tool_calls);
    assert.ok(!message.content && !message.reasoning_content, JSON.stringify(message));
    const streamed = (await client.chat.completions.stream(body).finalChatCompletion()).choices[0].message;
    assert.deepEqual(streamed.tool_calls.map((c) => [c.function.name, c.function.arguments]),
      message.tool_calls.map((c) => [c.function.name, c.function.arguments]));
  }
}

// Anthropic Messages: a thinking block and a text block from the reply `thoughtReply` forces
// ("Hmm." and "Sunny."; seeded: the grammar admits spellings of the reply in more tokens than
// max_tokens, and an unseeded sample once took one of them); with tool_choice any (parallel use off: one call) and a named tool,
// tool_use blocks whose input validates, streamed the same.
export async function assertAnthropicReplies(url, thoughtReply) {
  const anthropic = new Anthropic({ baseURL: url, apiKey: 'none', maxRetries: 0 });
  const thought = await anthropic.messages.create({
    model: 'm', max_tokens: 60, messages, thinking: { type: 'enabled', budget_tokens: 1024 },
    grammar: literalGrammar(thoughtReply), seed: 1,
  });
  assert.deepEqual(thought.content.map((b) => b.type), ['thinking', 'text']);
  assert.equal(thought.content[0].thinking, 'Hmm.');
  assert.equal(thought.content[1].text, 'Sunny.');
  // gpt-oss's template prints each tool's description (and raises without one, as Jinja2 does).
  const anthropicTools = tools.map((t) => ({ name: t.function.name, description: t.function.description, input_schema: t.function.parameters }));
  const base = { model: 'm', max_tokens: 300, temperature: 1, messages, tools: anthropicTools, seed: 1 };
  for (const tool_choice of [{ type: 'any', disable_parallel_tool_use: true }, { type: 'tool', name: 'get_weather' }]) {
    const m = await anthropic.messages.create({ ...base, tool_choice });
    assert.equal(m.stop_reason, 'tool_use', JSON.stringify(m));
    const uses = m.content.filter((b) => b.type === 'tool_use');
    // One call when parallel use is off; a named tool may be called several times.
    if (tool_choice.disable_parallel_tool_use) assert.equal(uses.length, 1);
    else assert.ok(uses.length >= 1 && uses.every((u) => u.name === tool_choice.name), JSON.stringify(uses));
    assertValidCalls(uses.map((u) => ({ function: { name: u.name, arguments: JSON.stringify(u.input) } })));
    const streamed = await anthropic.messages.stream({ ...base, tool_choice }).finalMessage();
    assert.deepEqual(streamed.content.filter((b) => b.type === 'tool_use').map((b) => [b.name, b.input]),
      uses.map((b) => [b.name, b.input]));
  }
}

// The tools as the Responses API takes them.
export const responseTools = tools.map((t) => ({ type: 'function', ...t.function }));

// Responses with tool_choice required: one function_call item whose arguments validate, and the
// streamed argument deltas add up to them.
export async function assertResponsesCall(client) {
  const body = {
    model: 'm', input: 'Weather in Paris?', tools: responseTools, tool_choice: 'required', parallel_tool_calls: false,
    max_output_tokens: 300, temperature: 1, seed: 2,
  };
  const r = await client.responses.create(body);
  assert.equal(r.status, 'completed', JSON.stringify(r));
  const calls = r.output.filter((o) => o.type === 'function_call');
  assert.equal(calls.length, 1);
  assertValidCalls(calls.map((c) => ({ function: c })));
  let args = '';
  for await (const event of await client.responses.create({ ...body, stream: true })) {
    if (event.type === 'response.function_call_arguments.delta') args += event.delta;
  }
  assert.equal(args, calls[0].arguments);
  return body;
}
