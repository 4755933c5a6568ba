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
import path from 'node:path';
import { describe, test } from 'node:test';

import {
  assertAnthropicReplies, assertForcedCalls, assertResponsesCall, assertSplitReply, callReplySplit, chatModelServer,
  literalGrammar, messages, responseTools, tools, vocabPath,
} from './chat_tools.js';
import { minferBin, needs, postJson, testData } from './helpers.js';

const templates = path.join(testData, 'templates');

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
    const ctx = chatModelServer('qwen3', templatePath);

    test('the template renders its switches; the model answers', async () => {
      await format.checkPrompt(ctx.url);
      const r = await postJson(`${ctx.url}/v1/chat/completions`, { messages, max_tokens: 4, temperature: 0 });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.usage.completion_tokens, 4);
    });

    test('a reply splits into reasoning_content, content and tool_calls, streamed as not', async () => {
      const body = { model: 'm', messages, tools, grammar: literalGrammar(format.callReply), max_tokens: 300, temperature: 0 };
      await assertSplitReply(ctx.client, body);
    });

    test('tool_choice required and named: one call whose arguments validate, streamed as not', async () => {
      await assertForcedCalls(ctx.client);
    });

    test('history round trip: reasoning, the call and its result render back', async () => {
      const { url, client } = ctx;
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
      await assertAnthropicReplies(ctx.url, format.thoughtReply);
    });

    test('Responses: reasoning and function_call items, streamed as not', async () => {
      const literal = await ctx.client.responses.create({
        model: 'm', input: 'Weather in Paris?', tools: responseTools, grammar: literalGrammar(format.callReply), max_output_tokens: 300,
      });
      assert.deepEqual(literal.output.filter((o) => o.type === 'function_call').map((o) => [o.name, JSON.parse(o.arguments)]), callReplySplit.calls);
      assert.equal(literal.output_text, 'Let me check.');
      await assertResponsesCall(ctx.client);
    });
  });
}
