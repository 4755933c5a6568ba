// Qwen3.5's chat through a real `minfer serve`: a tiny Qwen3.5 model (hybrid gated delta-net
// layers, random weights) that `minfer make-model` builds with the real Qwen vocabulary and the
// real Qwen3.5 template (../shared/templates/Qwen3.5-4B.jinja), whose generation prompt opens
// <think> and whose tool calls are XML (<tool_call><function=NAME><parameter=P>…).
//
// As in tool_calls.test.js, replies that must hold given text are forced with a GBNF `grammar`;
// tool_choice required / named / any makes the model's own calls in the XML format, held to the
// tools' schemas by the tool-call grammar, and the arguments the server returns must validate.
// The OpenAI chat API (streamed and not), Anthropic's Messages API and the Responses API.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import Anthropic from '@anthropic-ai/sdk';
import Ajv from 'ajv';
import OpenAI from 'openai';

import { literalGrammar, tools } from './chat_tools.js';
import { minferBin, needs, postJson, startServer, testData } from './helpers.js';

const vocabPath = path.join(testData, 'models', 'qwen3-vocab.gguf');
const templatePath = path.join(testData, 'templates', 'Qwen3.5-4B.jinja');
const skip = needs(minferBin, vocabPath, templatePath);

const messages = [{ role: 'user', content: 'Weather in Paris?' }];

// The generation prompt opened <think>: the reply starts inside the reasoning.
const callReply = [
  'The user wants the weather.\n</think>\n\nLet me check.\n\n',
  '<tool_call>\n<function=get_weather>\n<parameter=city>\nSaint-Étienne\n</parameter>\n',
  '<parameter=days>\n3\n</parameter>\n<parameter=hourly>\ntrue\n</parameter>\n</function>\n</tool_call>\n',
  '<tool_call>\n<function=get_time>\n</function>\n</tool_call>',
].join('');

describe('qwen3.5 chat: template, reasoning and XML tool calls', { skip }, () => {
  let dir, server, url, client;
  const ajv = new Ajv({ strict: false });
  const validators = Object.fromEntries(tools.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'minfer-qwen35-'));
    const model = path.join(dir, 'qwen35-chat.gguf');
    execFileSync(minferBin, [
      'make-model', '--arch', 'qwen35', '--preset', 'tiny', '--type', 'q8_0', '--tokenizer-from', vocabPath,
      '--chat-template', templatePath, '-t', '2', '-o', model,
    ], { stdio: 'pipe' });
    server = await startServer(['-np', '2'], {}, model);
    url = server.url;
    client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
  });
  after(async () => {
    if (server) assert.equal((await server.stop()).code, 0);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('the model runs with the real template: /props, the prompt opens <think>', async () => {
    const props = await (await fetch(`${url}/props`)).json();
    assert.match(props.chat_template, /<function=/);
    const applied = await postJson(`${url}/apply-template`, { messages });
    assert.equal(applied.status, 200, applied.text);
    assert.ok(applied.json.prompt.endsWith('<|im_start|>assistant\n<think>\n'), applied.json.prompt);
    const off = await postJson(`${url}/apply-template`, { messages, chat_template_kwargs: { enable_thinking: false } });
    assert.ok(off.json.prompt.endsWith('<think>\n\n</think>\n\n'), off.json.prompt);
    const r = await postJson(`${url}/v1/chat/completions`, { messages, max_tokens: 4, temperature: 0 });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.usage.completion_tokens, 4);
  });

  test('an XML reply gives reasoning_content, content and typed tool_calls, streamed as not', async () => {
    const body = { model: 'm', messages, tools, grammar: literalGrammar(callReply), max_tokens: 200, temperature: 0 };
    // What a choice says: its finish, reasoning, content, and each call's name and arguments.
    const summary = ({ finish_reason: finish, message: m }) => ({
      finish, reasoning: m.reasoning_content, content: m.content,
      calls: m.tool_calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]),
    });
    const expected = {
      finish: 'tool_calls', reasoning: 'The user wants the weather.', content: 'Let me check.',
      calls: [['get_weather', { city: 'Saint-Étienne', days: 3, hourly: true }], ['get_time', {}]],
    };
    const whole = (await client.chat.completions.create(body)).choices[0];
    assert.deepEqual(summary(whole), expected);
    assert.ok(whole.message.tool_calls.every((c) => /^call_[A-Za-z0-9]+$/.test(c.id)));
    // The SDK's stream helper keeps the last reasoning_content delta, not their sum (the raw
    // chunks below carry the whole reasoning).
    const streamed = (await client.chat.completions.stream(body).finalChatCompletion()).choices[0];
    assert.deepEqual({ ...summary(streamed), reasoning: expected.reasoning }, expected);
    assert.deepEqual(streamed.message.tool_calls.map((c) => c.function.arguments),
      whole.message.tool_calls.map((c) => c.function.arguments));

    // The raw chunks: no markup in any content or reasoning delta.
    let content = '';
    let reasoning = '';
    for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) {
      content += chunk.choices[0]?.delta?.content ?? '';
      reasoning += chunk.choices[0]?.delta?.reasoning_content ?? '';
    }
    assert.equal(content, 'Let me check.');
    assert.equal(reasoning, 'The user wants the weather.');
  });

  // Each call names one of the tools and its arguments validate against that tool's schema.
  const assertValid = (calls) => {
    for (const c of calls) {
      const valid = validators[c.function.name]?.(JSON.parse(c.function.arguments));
      assert.ok(valid, `${c.function.name}: ${c.function.arguments}`);
    }
  };

  test('tool_choice required and named: one XML call whose arguments validate, streamed as not', async () => {
    const named = (name) => ({ type: 'function', function: { name } });
    const runs = [['required', 1], ['required', 2], ['required', 3], [named('get_weather'), 4], [named('plot'), 4]];
    for (const [tool_choice, seed] of runs) {
      const body = { model: 'm', messages, tools, tool_choice, parallel_tool_calls: false, max_tokens: 300, temperature: 1, seed };
      const { finish_reason: finish, message } = (await client.chat.completions.create(body)).choices[0];
      assert.equal(finish, 'tool_calls', JSON.stringify(message));
      assert.equal(message.tool_calls.length, 1);
      if (tool_choice.function) assert.equal(message.tool_calls[0].function.name, tool_choice.function.name);
      assertValid(message.tool_calls);
      // The forced call closes the reasoning the prompt opened: no text around it.
      assert.ok(!message.content && !message.reasoning_content, JSON.stringify(message));
      const streamed = (await client.chat.completions.stream(body).finalChatCompletion()).choices[0].message;
      assert.deepEqual(streamed.tool_calls.map((c) => [c.function.name, c.function.arguments]),
        message.tool_calls.map((c) => [c.function.name, c.function.arguments]));
    }
  });

  test('history round trip: the calls and their results render back through the template', async () => {
    const first = await client.chat.completions.create({
      model: 'm', messages, tools, tool_choice: 'required', max_tokens: 300, temperature: 1, seed: 5,
    });
    const calls = first.choices[0].message.tool_calls;
    assert.ok(calls.length >= 1, JSON.stringify(first.choices[0]));
    const history = [
      ...messages,
      { role: 'assistant', content: null, tool_calls: calls },
      ...calls.map((c, i) => ({ role: 'tool', tool_call_id: c.id, content: `result ${i}` })),
    ];
    // The template writes each call back in XML (arguments as objects, as the chat route passes
    // them; /apply-template renders the body as given) and the results as <tool_response>.
    const asObjects = calls.map((c) => ({ ...c, function: { ...c.function, arguments: JSON.parse(c.function.arguments) } }));
    const applied = await postJson(`${url}/apply-template`, {
      messages: [history[0], { ...history[1], tool_calls: asObjects }, ...history.slice(2)], tools,
    });
    assert.equal(applied.status, 200, applied.text);
    for (const c of calls) assert.ok(applied.json.prompt.includes(`<tool_call>\n<function=${c.function.name}>\n`));
    assert.match(applied.json.prompt, /<\|im_start\|>user\n<tool_response>\nresult 0\n<\/tool_response>/);
    // The chat route renders the same history (arguments as JSON text) and answers.
    const end = await postJson(`${url}/tokenize`, { content: '<|im_end|>', parse_special: true });
    const second = await client.chat.completions.create({
      model: 'm', messages: history, tools, tool_choice: 'auto', max_tokens: 24, temperature: 0,
      logit_bias: { [end.json.tokens[0]]: 100 },
    });
    assert.equal(second.choices[0].finish_reason, 'stop');
    assert.ok(second.usage.prompt_tokens > first.usage.prompt_tokens);
  });

  test('Anthropic Messages: thinking, and tool_use blocks whose input validates', async () => {
    const anthropic = new Anthropic({ baseURL: url, apiKey: 'none', maxRetries: 0 });
    const thought = await anthropic.messages.create({
      model: 'm', max_tokens: 60, messages, thinking: { type: 'enabled', budget_tokens: 1024 },
      grammar: literalGrammar('Hmm.\n</think>\n\nSunny.'),
    });
    assert.deepEqual(thought.content.map((b) => b.type), ['thinking', 'text']);
    assert.equal(thought.content[0].thinking, 'Hmm.');
    assert.equal(thought.content[1].text, 'Sunny.');

    const anthropicTools = tools.map((t) => ({ name: t.function.name, input_schema: t.function.parameters }));
    const base = { model: 'm', max_tokens: 300, temperature: 1, messages, tools: anthropicTools, seed: 1 };
    for (const tool_choice of [{ type: 'any', disable_parallel_tool_use: true }, { type: 'tool', name: 'get_weather' }]) {
      const m = await anthropic.messages.create({ ...base, tool_choice });
      assert.equal(m.stop_reason, 'tool_use', JSON.stringify(m));
      const uses = m.content.filter((b) => b.type === 'tool_use');
      assert.ok(uses.length >= 1);
      assertValid(uses.map((u) => ({ function: { name: u.name, arguments: JSON.stringify(u.input) } })));
      const streamed = await anthropic.messages.stream({ ...base, tool_choice }).finalMessage();
      assert.deepEqual(streamed.content.filter((b) => b.type === 'tool_use').map((b) => [b.name, b.input]),
        uses.map((b) => [b.name, b.input]));
    }
  });

  test('Responses: function_call items whose arguments validate, streamed as not', async () => {
    const responseTools = tools.map((t) => ({ type: 'function', ...t.function }));
    const body = {
      model: 'm', input: 'Weather in Paris?', tools: responseTools, tool_choice: 'required', parallel_tool_calls: false,
      max_output_tokens: 300, temperature: 1, seed: 2,
    };
    const r = await client.responses.create(body);
    assert.equal(r.status, 'completed', JSON.stringify(r));
    const calls = r.output.filter((o) => o.type === 'function_call');
    assert.equal(calls.length, 1);
    assertValid(calls.map((c) => ({ function: c })));
    const stream = await client.responses.create({ ...body, stream: true });
    let args = '';
    for await (const event of stream) {
      if (event.type === 'response.function_call_arguments.delta') args += event.delta;
    }
    assert.equal(args, calls[0].arguments);
    const named = await client.responses.create({ ...body, tool_choice: { type: 'function', name: 'plot' } });
    const namedCalls = named.output.filter((o) => o.type === 'function_call');
    assert.deepEqual(namedCalls.map((o) => o.name), ['plot']);
    assertValid(namedCalls.map((c) => ({ function: c })));
  });
});
