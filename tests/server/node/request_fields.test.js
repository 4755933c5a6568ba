// The OpenAI request fields agent frameworks and older clients send (issue 48): legacy
// functions / function_call, best_of, suffix (fill-in-the-middle), reasoning_effort and
// reasoning_budget per request, chat_template_kwargs; the known fields minfer does not act on are
// 400s naming them. LangChain.js's bindTools under a small maxTokens still gets its call.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';

import { ChatOpenAI } from '@langchain/openai';

import { minferBin, needs, postJson, suiteServer, testData } from './helpers.js';

const qwen3Path = path.join(testData, 'models', 'qwen3-qwentok-tiny-q8_0.gguf');
const storiesPath = path.join(testData, 'models', 'stories260K.gguf');
const skip = needs(minferBin, qwen3Path, storiesPath);

const messages = [{ role: 'user', content: 'What is 2 + 3?' }];
const addFunction = {
  name: 'add',
  description: 'a + b',
  parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'] },
};

describe('request fields', { skip }, () => {
  const ctx = suiteServer(['-np', '2'], {}, qwen3Path);
  const chat = (body) => postJson(`${ctx.url}/v1/chat/completions`, body);
  const complete = (body) => postJson(`${ctx.url}/v1/completions`, body);
  const tokens = async (content) => (await postJson(`${ctx.url}/tokenize`, { content })).json.tokens.length;

  test('legacy functions and function_call: the call comes back as function_call', async () => {
    const body = {
      model: 'm', messages, functions: [addFunction], function_call: { name: 'add' }, max_tokens: 200, temperature: 1, seed: 3,
    };
    const r = await chat(body);
    assert.equal(r.status, 200, r.text);
    const choice = r.json.choices[0];
    assert.equal(choice.finish_reason, 'function_call', r.text);
    assert.equal(choice.message.tool_calls, undefined);
    assert.equal(choice.message.function_call.name, 'add');
    const args = JSON.parse(choice.message.function_call.arguments);
    assert.ok(Number.isInteger(args.a) && Number.isInteger(args.b), choice.message.function_call.arguments);

    // Streamed: delta.function_call pieces adding up to the same call.
    const stream = await ctx.client.chat.completions.create({ ...body, stream: true });
    let name = '';
    let streamedArgs = '';
    let finish = null;
    for await (const chunk of stream) {
      const c = chunk.choices[0];
      if (!c) continue;
      name += c.delta?.function_call?.name ?? '';
      streamedArgs += c.delta?.function_call?.arguments ?? '';
      finish = c.finish_reason ?? finish;
    }
    assert.equal(name, 'add');
    assert.equal(streamedArgs, choice.message.function_call.arguments);
    assert.equal(finish, 'function_call');

    // A legacy history (an assistant's function_call, a role "function" result) is accepted.
    const history = [
      ...messages,
      { role: 'assistant', content: null, function_call: choice.message.function_call },
      { role: 'function', name: 'add', content: '5' },
    ];
    const next = await chat({ model: 'm', messages: history, functions: [addFunction], function_call: 'none', max_tokens: 4 });
    assert.equal(next.status, 200, next.text);
    assert.equal(next.json.choices[0].message.function_call, undefined);
  });

  test('legacy fields that clash or are malformed are 400s naming them', async () => {
    const tools = [{ type: 'function', function: addFunction }];
    const cases = [
      [{ functions: [addFunction], tools }, 'functions'],
      [{ function_call: 'auto' }, 'function_call'],
      [{ functions: [addFunction], function_call: 7 }, 'function_call'],
      [{ functions: [addFunction], function_call: 'auto', tool_choice: 'auto' }, 'function_call'],
      [{ functions: {} }, 'functions'],
    ];
    for (const [extra, param] of cases) {
      const r = await chat({ messages, max_tokens: 2, ...extra });
      assert.equal(r.status, 400, JSON.stringify(extra));
      assert.equal(r.json.error.param, param, r.text);
    }
  });

  test('best_of: the n candidates with the best mean logprob, every candidate counted', async () => {
    const base = { model: 'm', prompt: 'Once upon a time', max_tokens: 6, temperature: 1, seed: 11 };
    // best_of 3 draws the same candidates as n 3 (seeds 11, 12, 13).
    const all = await complete({ ...base, n: 3, logprobs: 0 });
    assert.equal(all.status, 200, all.text);
    const mean = (c) => c.logprobs.token_logprobs.reduce((a, b) => a + b, 0) / c.logprobs.token_logprobs.length;
    const ranked = [...all.json.choices].sort((x, y) => mean(y) - mean(x));
    const best = await complete({ ...base, best_of: 3, logprobs: 0 });
    assert.equal(best.status, 200, best.text);
    assert.equal(best.json.choices.length, 1);
    assert.equal(best.json.choices[0].index, 0);
    assert.equal(best.json.choices[0].text, ranked[0].text);
    assert.equal(best.json.usage.completion_tokens, all.json.usage.completion_tokens);
    const two = await complete({ ...base, best_of: 3, n: 2 });
    assert.deepEqual(two.json.choices.map((c) => c.text), ranked.slice(0, 2).map((c) => c.text));
    assert.equal(two.json.choices[0].logprobs, null);
    for (const [extra, param] of [[{ best_of: 1, n: 2 }, 'best_of'], [{ best_of: 2, stream: true }, 'best_of'], [{ best_of: 0 }, 'best_of']]) {
      const r = await complete({ ...base, ...extra });
      assert.equal(r.status, 400, JSON.stringify(extra));
      assert.equal(r.json.error.param, param, r.text);
    }
    const inChat = await chat({ messages, max_tokens: 2, best_of: 2 });
    assert.equal(inChat.status, 400);
    assert.equal(inChat.json.error.param, 'best_of');
  });

  test('suffix: the prompt in the model\'s fill-in-the-middle tokens', async () => {
    const prompt = 'def add(a, b):\n    ';
    const suffix = '\n\nprint(add(2, 3))\n';
    const r = await complete({ model: 'm', prompt, suffix, max_tokens: 4, temperature: 0 });
    assert.equal(r.status, 200, r.text);
    // <|fim_prefix|> prompt <|fim_suffix|> suffix <|fim_middle|>
    assert.equal(r.json.usage.prompt_tokens, (await tokens(prompt)) + (await tokens(suffix)) + 3);
    const plain = await complete({ model: 'm', prompt, max_tokens: 4, temperature: 0 });
    assert.equal(plain.json.usage.prompt_tokens, await tokens(prompt));
    const bad = await complete({ model: 'm', prompt, suffix: 3, max_tokens: 4 });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.param, 'suffix');
  });

  test('reasoning_effort and reasoning_budget: budgets per request, a bad value a 400', async () => {
    const think = await chat({ messages, max_tokens: 2 });
    const none = await chat({ messages, max_tokens: 2, reasoning_effort: 'none' });
    assert.equal(none.status, 200, none.text);
    // Qwen3's template writes an empty <think></think> block when thinking is off.
    assert.ok(none.json.usage.prompt_tokens > think.json.usage.prompt_tokens, none.text);
    const zero = await chat({ messages, max_tokens: 2, reasoning_budget: 0 });
    assert.equal(zero.json.usage.prompt_tokens, none.json.usage.prompt_tokens);
    // The grammar makes the model open <think>. A grammar that allows the close: the budget of 3
    // writes it and the answer follows the grammar. One that does not: the grammar decides (the
    // budget's close used to fail the request with a 500).
    const closing = 'root ::= "<think>" [a-z ]+ "\\n</think>\\n\\n" [a-z ]+ "."';
    const refusing = 'root ::= "<think>" [a-z ]+ "."';
    for (const seed of [1, 2, 3]) {
      const closed = await chat({ messages, max_tokens: 30, temperature: 1, seed, reasoning_budget: 3, grammar: closing });
      assert.equal(closed.status, 200, closed.text);
      assert.ok(closed.json.choices[0].message.reasoning_content.length > 0, closed.text);
      assert.match(closed.json.choices[0].message.content, /^[a-z ]+\.?$/, closed.text);
      const open = await chat({ messages, max_tokens: 30, temperature: 1, seed, reasoning_budget: 3, grammar: refusing });
      assert.equal(open.status, 200, open.text);
      assert.equal(open.json.choices[0].message.content, '', open.text);
    }
    const low = await chat({ messages, max_tokens: 2, reasoning_effort: 'low' });
    assert.equal(low.status, 200, low.text);
    for (const [extra, param] of [
      [{ reasoning_effort: 'extreme' }, 'reasoning_effort'],
      [{ reasoning_effort: 'low', reasoning_budget: 5 }, 'reasoning_effort'],
      [{ reasoning_budget: -2 }, 'reasoning_budget'],
      [{ reasoning_budget: 'x' }, 'reasoning_budget'],
    ]) {
      const r = await chat({ messages, max_tokens: 2, ...extra });
      assert.equal(r.status, 400, JSON.stringify(extra));
      assert.equal(r.json.error.param, param, r.text);
    }
  });

  test('chat_template_kwargs reach the template: enable_thinking false', async () => {
    const on = await chat({ messages, max_tokens: 2 });
    const off = await chat({ messages, max_tokens: 2, chat_template_kwargs: { enable_thinking: false } });
    assert.equal(off.status, 200, off.text);
    assert.ok(off.json.usage.prompt_tokens > on.json.usage.prompt_tokens);
    const bad = await chat({ messages, max_tokens: 2, chat_template_kwargs: 'no' });
    assert.equal(bad.status, 400);
  });

  test('known OpenAI fields that would change the reply are 400s naming them; the rest pass', async () => {
    const refused = [
      [{ audio: { voice: 'alloy', format: 'wav' } }, 'audio'],
      [{ prediction: { type: 'content', content: 'x' } }, 'prediction'],
      [{ web_search_options: {} }, 'web_search_options'],
      [{ modalities: ['text', 'audio'] }, 'modalities'],
      [{ store: true }, 'store'],
      [{ service_tier: 'flex' }, 'service_tier'],
      [{ verbosity: 'low' }, 'verbosity'],
    ];
    for (const [extra, param] of refused) {
      const r = await chat({ messages, max_tokens: 2, ...extra });
      assert.equal(r.status, 400, JSON.stringify(extra));
      assert.equal(r.json.error.param, param, r.text);
    }
    const accepted = await chat({
      messages, max_tokens: 2, store: false, metadata: { run: '1' }, modalities: ['text'], service_tier: 'auto',
      prompt_cache_key: 'k', safety_identifier: 'u',
    });
    assert.equal(accepted.status, 200, accepted.text);
  });

  // Small numbers: this random model writes unbounded integers with all 15 digits the grammar
  // allows, a token each (agent_limits.test.js).
  test('LangChain.js bindTools with maxTokens 40 returns one call', async () => {
    const small = { type: 'integer', minimum: 0, maximum: 1000 };
    const smallAdd = { ...addFunction, parameters: { ...addFunction.parameters, properties: { a: small, b: small } } };
    for (const seed of [1, 2, 3]) {
      const llm = new ChatOpenAI({
        model: 'm', apiKey: 'none', configuration: { baseURL: `${ctx.url}/v1` }, maxTokens: 40, temperature: 1, maxRetries: 0,
        modelKwargs: { seed },
      });
      const bound = llm.bindTools([{ type: 'function', function: smallAdd }], { tool_choice: 'add' });
      const reply = await bound.invoke('What is 2 + 3?');
      assert.equal(reply.tool_calls.length, 1, JSON.stringify(reply));
      assert.equal(reply.tool_calls[0].name, 'add');
      assert.ok(Number.isInteger(reply.tool_calls[0].args.a), JSON.stringify(reply.tool_calls[0]));
    }
  });
});

describe('suffix without fill-in-the-middle tokens', { skip }, () => {
  const ctx = suiteServer([], {}, storiesPath);

  test('is a 400 naming suffix', async () => {
    const r = await postJson(`${ctx.url}/v1/completions`, { prompt: 'Once', suffix: 'end.', max_tokens: 4 });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.param, 'suffix');
  });
});
