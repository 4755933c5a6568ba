// gpt-oss's harmony and Gemma 4's chat formats through a real `minfer serve`: tiny models that
// `minfer make-model` builds (qwen3 shape, random weights) with the Qwen vocabulary and the real
// templates (../shared/templates/openai-gpt-oss-120b.jinja, google-gemma-4-31B-it.jinja). The
// formats' markers (<|channel|>, <|tool_call>, <|"|>, …) are not tokens of that vocabulary: the
// model writes them as text, which is what the reply parser reads either way (with gpt-oss's and
// Gemma 4's own vocabularies they are tokens whose text is always rendered).
//
// Replies that must hold given text are forced with a GBNF `grammar`; tool_choice required /
// named / any makes the model's own calls in the format, held to the tools' schemas by the
// tool-call grammar, and the arguments the server returns must validate. The OpenAI chat API
// (streamed and not), Anthropic's Messages API and the Responses API.
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
const templates = path.join(testData, 'templates');

const messages = [{ role: 'user', content: 'Weather in Paris?' }];
const expectedCalls = [['get_weather', { city: 'Saint-Étienne', days: 3, hourly: true }], ['get_time', {}]];

const formats = [
  {
    name: 'gpt-oss harmony',
    template: 'openai-gpt-oss-120b.jinja',
    // The prompt ends with "<|start|>assistant": the reply is messages on channels — analysis,
    // a commentary preamble, then two calls (both spellings of a call's header).
    callReply: [
      '<|channel|>analysis<|message|>The user wants the weather.<|end|>',
      '<|start|>assistant<|channel|>commentary<|message|>Let me check.<|end|>',
      '<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>',
      '{"city":"Saint-Étienne","days":3,"hourly":true}<|call|>',
      '<|start|>assistant to=functions.get_time<|channel|>commentary json<|message|>{}<|call|>',
    ].join(''),
    thoughtReply: '<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant<|channel|>final<|message|>Sunny.',
    checkPrompt: async (url) => {
      const plain = await postJson(`${url}/apply-template`, { messages });
      assert.equal(plain.status, 200, plain.text);
      assert.ok(plain.json.prompt.endsWith('<|start|>user<|message|>Weather in Paris?<|end|><|start|>assistant'), plain.json.prompt);
      assert.match(plain.json.prompt, /\nReasoning: medium\n/);
      // reasoning_effort is the template's Reasoning: line.
      const high = await postJson(`${url}/apply-template`, { messages, reasoning_effort: 'high' });
      assert.match(high.json.prompt, /\nReasoning: high\n/);
      const withTools = await postJson(`${url}/apply-template`, { messages, tools });
      assert.match(withTools.json.prompt, /namespace functions \{\n\n\/\/ The weather in a city\ntype get_weather = /);
    },
    historyMarks: (calls) => [
      '<|start|>assistant<|channel|>analysis<|message|>Thinking it over.<|end|>',
      `<|start|>assistant to=functions.${calls[0].function.name}<|channel|>commentary json<|message|>`,
      `<|start|>functions.${calls[0].function.name} to=assistant<|channel|>commentary<|message|>"result 0"<|end|>`,
    ],
  },
  {
    name: 'Gemma 4',
    template: 'google-gemma-4-31B-it.jinja',
    // Thinking on: a thought, the content, then two calls in Gemma 4's argument syntax.
    callReply: [
      '<|channel>thought\nThe user wants the weather.<channel|>Let me check.',
      '<|tool_call>call:get_weather{city:<|"|>Saint-Étienne<|"|>,days:3,hourly:true}<tool_call|>',
      '<|tool_call>call:get_time{}<tool_call|>',
    ].join(''),
    thoughtReply: '<|channel>thought\nHmm.<channel|>Sunny.',
    checkPrompt: async (url) => {
      const off = await postJson(`${url}/apply-template`, { messages });
      assert.equal(off.status, 200, off.text);
      assert.ok(off.json.prompt.endsWith('<|turn>model\n<|channel>thought\n<channel|>'), off.json.prompt);
      const on = await postJson(`${url}/apply-template`, { messages, chat_template_kwargs: { enable_thinking: true } });
      assert.ok(on.json.prompt.includes('<|turn>system\n<|think|>\n<turn|>\n'), on.json.prompt);
      assert.ok(on.json.prompt.endsWith('<|turn>model\n'), on.json.prompt);
    },
    historyMarks: (calls) => [
      '<|channel>thought\nThinking it over.\n<channel|>',
      `<|tool_call>call:${calls[0].function.name}{`,
      `<|tool_response>response:${calls[0].function.name}{value:<|"|>result 0<|"|>}<tool_response|>`,
    ],
  },
];

for (const format of formats) {
  const templatePath = path.join(templates, format.template);
  describe(`${format.name} chat: template, channels and tool calls`, { skip: needs(minferBin, vocabPath, templatePath) }, () => {
    let dir, server, url, client;
    const ajv = new Ajv({ strict: false });
    const validators = Object.fromEntries(tools.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));
    const assertValid = (calls) => {
      for (const c of calls) {
        const valid = validators[c.function.name]?.(JSON.parse(c.function.arguments));
        assert.ok(valid, `${c.function.name}: ${c.function.arguments}`);
      }
    };

    before(async () => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'minfer-channels-'));
      const model = path.join(dir, 'channels.gguf');
      execFileSync(minferBin, [
        'make-model', '--arch', 'qwen3', '--preset', 'tiny', '--type', 'q8_0', '--tokenizer-from', vocabPath,
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

    test('the template renders its switches; the model answers', async () => {
      await format.checkPrompt(url);
      const r = await postJson(`${url}/v1/chat/completions`, { messages, max_tokens: 4, temperature: 0 });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.usage.completion_tokens, 4);
    });

    test('a reply splits into reasoning_content, content and tool_calls, streamed as not', async () => {
      const body = { model: 'm', messages, tools, grammar: literalGrammar(format.callReply), max_tokens: 300, temperature: 0 };
      const summary = ({ finish_reason: finish, message: m }) => ({
        finish, reasoning: m.reasoning_content, content: m.content,
        calls: m.tool_calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]),
      });
      const expected = { finish: 'tool_calls', reasoning: 'The user wants the weather.', content: 'Let me check.', calls: expectedCalls };
      const whole = (await client.chat.completions.create(body)).choices[0];
      assert.deepEqual(summary(whole), expected);
      assert.ok(whole.message.tool_calls.every((c) => /^call_[A-Za-z0-9]+$/.test(c.id)));
      const streamed = (await client.chat.completions.stream(body).finalChatCompletion()).choices[0];
      assert.deepEqual({ ...summary(streamed), reasoning: expected.reasoning }, expected);
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

    test('tool_choice required and named: one call whose arguments validate, streamed as not', async () => {
      const named = (name) => ({ type: 'function', function: { name } });
      const runs = [['required', 1], ['required', 2], ['required', 3], [named('get_weather'), 4], [named('plot'), 4]];
      for (const [tool_choice, seed] of runs) {
        const body = { model: 'm', messages, tools, tool_choice, parallel_tool_calls: false, max_tokens: 300, temperature: 1, seed };
        const { finish_reason: finish, message } = (await client.chat.completions.create(body)).choices[0];
        assert.equal(finish, 'tool_calls', JSON.stringify(message));
        assert.equal(message.tool_calls.length, 1);
        if (tool_choice.function) assert.equal(message.tool_calls[0].function.name, tool_choice.function.name);
        assertValid(message.tool_calls);
        assert.ok(!message.content && !message.reasoning_content, JSON.stringify(message));
        const streamed = (await client.chat.completions.stream(body).finalChatCompletion()).choices[0].message;
        assert.deepEqual(streamed.tool_calls.map((c) => [c.function.name, c.function.arguments]),
          message.tool_calls.map((c) => [c.function.name, c.function.arguments]));
      }
    });

    test('history round trip: reasoning, the call and its result render back', async () => {
      const first = await client.chat.completions.create({
        model: 'm', messages, tools, tool_choice: 'required', parallel_tool_calls: false, max_tokens: 300, temperature: 1, seed: 5,
      });
      const calls = first.choices[0].message.tool_calls;
      assert.equal(calls.length, 1, JSON.stringify(first.choices[0]));
      const history = [
        ...messages,
        { role: 'assistant', content: '', reasoning_content: 'Thinking it over.', tool_calls: calls },
        { role: 'tool', tool_call_id: calls[0].id, content: 'result 0' },
      ];
      // The chat route renders the history (arguments as JSON text, reasoning_content as each
      // template reads it) and answers.
      const second = await client.chat.completions.create({ model: 'm', messages: history, tools, max_tokens: 4, temperature: 0 });
      assert.ok(second.usage.prompt_tokens > first.usage.prompt_tokens);
      const prompt = (await postJson(`${url}/apply-template`, {
        messages: [history[0], { ...history[1], tool_calls: calls.map((c) => ({ ...c, function: { ...c.function, arguments: JSON.parse(c.function.arguments) } })) }, history[2]],
        tools,
      })).json.prompt;
      for (const mark of format.historyMarks(calls)) assert.ok(prompt.includes(mark), `${mark}\n---\n${prompt}`);
    });

    test('Anthropic Messages: thinking, and tool_use blocks whose input validates', async () => {
      const anthropic = new Anthropic({ baseURL: url, apiKey: 'none', maxRetries: 0 });
      const thought = await anthropic.messages.create({
        model: 'm', max_tokens: 60, messages, thinking: { type: 'enabled', budget_tokens: 1024 },
        grammar: literalGrammar(format.thoughtReply),
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
        assertValid(uses.map((u) => ({ function: { name: u.name, arguments: JSON.stringify(u.input) } })));
        const streamed = await anthropic.messages.stream({ ...base, tool_choice }).finalMessage();
        assert.deepEqual(streamed.content.filter((b) => b.type === 'tool_use').map((b) => [b.name, b.input]),
          uses.map((b) => [b.name, b.input]));
      }
    });

    test('Responses: reasoning and function_call items, streamed as not', async () => {
      const responseTools = tools.map((t) => ({ type: 'function', ...t.function }));
      const literal = await client.responses.create({
        model: 'm', input: 'Weather in Paris?', tools: responseTools, grammar: literalGrammar(format.callReply), max_output_tokens: 300,
      });
      assert.deepEqual(literal.output.filter((o) => o.type === 'function_call').map((o) => [o.name, JSON.parse(o.arguments)]), expectedCalls);
      assert.equal(literal.output_text, 'Let me check.');
      const body = {
        model: 'm', input: 'Weather in Paris?', tools: responseTools, tool_choice: 'required', parallel_tool_calls: false,
        max_output_tokens: 300, temperature: 1, seed: 2,
      };
      const r = await client.responses.create(body);
      assert.equal(r.status, 'completed', JSON.stringify(r));
      const calls = r.output.filter((o) => o.type === 'function_call');
      assert.equal(calls.length, 1);
      assertValid(calls.map((c) => ({ function: c })));
      let args = '';
      for await (const event of await client.responses.create({ ...body, stream: true })) {
        if (event.type === 'response.function_call_arguments.delta') args += event.delta;
      }
      assert.equal(args, calls[0].arguments);
    });
  });
}
