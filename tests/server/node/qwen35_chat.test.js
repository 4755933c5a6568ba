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
import path from 'node:path';
import { describe, test } from 'node:test';

import {
  assertAnthropicReplies, assertForcedCalls, assertResponsesCall, assertSplitReply, assertValidCalls, chatModelServer,
  literalGrammar, messages, tools, vocabPath,
} from './chat_tools.js';
import { minferBin, needs, postJson, testData } from './helpers.js';

const templatePath = path.join(testData, 'templates', 'Qwen3.5-4B.jinja');
const skip = needs(minferBin, vocabPath, templatePath);

// The generation prompt opened <think>: the reply starts inside the reasoning.
const callReply = [
  'The user wants the weather.\n</think>\n\nLet me check.\n\n',
  '<tool_call>\n<function=get_weather>\n<parameter=city>\nSaint-Étienne\n</parameter>\n',
  '<parameter=days>\n3\n</parameter>\n<parameter=hourly>\ntrue\n</parameter>\n</function>\n</tool_call>\n',
  '<tool_call>\n<function=get_time>\n</function>\n</tool_call>',
].join('');

describe('qwen3.5 chat: template, reasoning and XML tool calls', { skip }, () => {
  const ctx = chatModelServer('qwen35', templatePath);

  test('the model runs with the real template: /props, the prompt opens <think>', async () => {
    const { url } = ctx;
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
    await assertSplitReply(ctx.client, body);
  });

  // The forced call closes the reasoning the prompt opened: no text around it.
  test('tool_choice required and named: one XML call whose arguments validate, streamed as not', async () => {
    await assertForcedCalls(ctx.client);
  });

  test('history round trip: the calls and their results render back through the template', async () => {
    const { url, client } = ctx;
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
    await assertAnthropicReplies(ctx.url, 'Hmm.\n</think>\n\nSunny.');
  });

  test('Responses: function_call items whose arguments validate, streamed as not', async () => {
    const body = await assertResponsesCall(ctx.client);
    const named = await ctx.client.responses.create({ ...body, tool_choice: { type: 'function', name: 'plot' } });
    const namedCalls = named.output.filter((o) => o.type === 'function_call');
    assert.deepEqual(namedCalls.map((o) => o.name), ['plot']);
    assertValidCalls(namedCalls.map((c) => ({ function: c })));
  });
});
