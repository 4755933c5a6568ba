// gpt-oss's harmony format live: `minfer serve` on the tiny gpt-oss file
// (../shared/models/gptoss-tiny-mxfp4.gguf: the gpt-oss architecture, its own vocabulary, where
// <|channel|>, <|message|>, <|start|>, <|end|>, <|constrain|>, <|return|> and <|call|> are
// special tokens, and the real template openai-gpt-oss-120b.jinja embedded byte for byte).
// Its random weights write gibberish: what is checked is that the server parses whatever comes
// the same way streamed and not (content, reasoning_content, tool_calls, finish_reason), with
// valid fields and no crash. Some requests raise the harmony tokens' logits so that the replies
// are full of real channel markup, well formed or not; one forces a well-formed reply with a
// grammar, written with the vocabulary's special tokens, and checks its parse.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import OpenAI from 'openai';

import { literalGrammar, tools } from './chat_tools.js';
import { minferBin, needs, postJson, startServer, testData } from './helpers.js';

const modelPath = path.join(testData, 'models', 'gptoss-tiny-mxfp4.gguf');
const templatePath = path.join(testData, 'templates', 'openai-gpt-oss-120b.jinja');
const skip = needs(minferBin, modelPath, templatePath);

const messages = [{ role: 'user', content: 'Weather in Paris?' }];
const toolNames = new Set(tools.map((t) => t.function.name));

// What two runs of one request must share: the parse, the finish and the token counts (the usage
// also reports the prefix cache's hits and, unseeded, the seed drawn).
const comparable = (c) => ({
  role: c.role, content: c.content, reasoning: c.reasoning, finish: c.finish,
  calls: c.calls.map(({ name, arguments: a }) => [name, a]),
  tokens: [c.usage.prompt_tokens, c.usage.completion_tokens],
});

// The message of a streamed completion, rebuilt from its raw chunks as a client does: the
// content and reasoning deltas joined, each call's name and argument pieces by index.
async function streamedChoice(client, body) {
  let content = '';
  let reasoning = '';
  let finish = null;
  let role = null;
  const calls = [];
  let usage = null;
  for await (const chunk of await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } })) {
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    const d = choice.delta ?? {};
    role = d.role ?? role;
    content += d.content ?? '';
    reasoning += d.reasoning_content ?? '';
    for (const c of d.tool_calls ?? []) {
      assert.ok(Number.isInteger(c.index) && c.index >= 0 && c.index <= calls.length, JSON.stringify(c));
      if (c.index === calls.length) {
        assert.match(c.id, /^call_[A-Za-z0-9]+$/);
        calls.push({ id: c.id, name: '', arguments: '' });
      }
      calls[c.index].name += c.function?.name ?? '';
      calls[c.index].arguments += c.function?.arguments ?? '';
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  return { role, content, reasoning, calls, finish, usage };
}

// The same from a whole completion; null content and reasoning read as ''.
function wholeChoice(r) {
  const { message: m, finish_reason: finish } = r.choices[0];
  const calls = (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }));
  return { role: m.role, content: m.content ?? '', reasoning: m.reasoning_content ?? '', calls, finish, usage: r.usage };
}

// Valid fields whatever the model wrote.
function assertValid(c, body, label) {
  assert.equal(c.role, 'assistant', label);
  assert.ok(['stop', 'length', 'tool_calls'].includes(c.finish), `${label}: finish ${c.finish}`);
  assert.equal(typeof c.content, 'string', label);
  assert.equal(typeof c.reasoning, 'string', label);
  assert.ok(c.usage.completion_tokens >= 1 && c.usage.completion_tokens <= body.max_tokens, `${label}: ${JSON.stringify(c.usage)}`);
  assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens, label);
  for (const call of c.calls) {
    assert.match(call.id, /^call_[A-Za-z0-9]+$/, label);
    assert.ok(call.name.length > 0, `${label}: ${JSON.stringify(call)}`);
    if (body.tools) assert.ok(toolNames.has(call.name), `${label}: ${call.name}`);
  }
  if (c.calls.length > 0) assert.equal(c.finish, 'tool_calls', label);
}

describe('gpt-oss harmony live on the tiny gpt-oss model', { skip }, () => {
  let server, url, client, tokens;

  before(async () => {
    server = await startServer(['-np', '2'], {}, modelPath);
    url = server.url;
    client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
    // The harmony tokens' ids in this vocabulary.
    tokens = {};
    for (const t of ['<|channel|>', '<|message|>', '<|start|>', '<|end|>', '<|constrain|>', '<|call|>', '<|return|>']) {
      const r = await postJson(`${url}/tokenize`, { content: t, parse_special: true });
      assert.equal(r.json.tokens.length, 1, `${t}: ${r.text}`);
      tokens[t] = r.json.tokens[0];
    }
  });
  after(async () => {
    if (server) assert.equal((await server.stop()).code, 0);
  });

  test('the real template: /props holds it byte for byte, the prompt ends <|start|>assistant', async () => {
    const props = await (await fetch(`${url}/props`)).json();
    assert.equal(props.chat_template, readFileSync(templatePath, 'utf8'));
    const applied = await postJson(`${url}/apply-template`, { messages, tools, reasoning_effort: 'low' });
    assert.equal(applied.status, 200, applied.text);
    assert.ok(applied.json.prompt.endsWith('<|start|>user<|message|>Weather in Paris?<|end|><|start|>assistant'), applied.json.prompt);
    assert.match(applied.json.prompt, /\nReasoning: low\n/);
    assert.match(applied.json.prompt, /namespace functions \{/);
  });

  // OpenAI's reasoning_effort none / minimal (no thinking) reach the template as low, the least
  // its "Reasoning:" line knows; chat and Responses answer.
  test('reasoning_effort none and minimal: "Reasoning: low", and the request runs', async () => {
    for (const effort of ['none', 'minimal']) {
      const applied = await postJson(`${url}/apply-template`, { messages, reasoning_effort: effort });
      assert.match(applied.json.prompt, /\nReasoning: low\n/, effort);
      const r = await postJson(`${url}/v1/chat/completions`, { messages, reasoning_effort: effort, max_tokens: 4, temperature: 0 });
      assert.equal(r.status, 200, r.text);
      const low = await postJson(`${url}/v1/chat/completions`, { messages, reasoning_effort: 'low', max_tokens: 4, temperature: 0 });
      assert.equal(r.json.usage.prompt_tokens, low.json.usage.prompt_tokens, effort);
      const resp = await client.responses.create({ model: 'm', input: 'Hi', reasoning: { effort }, max_output_tokens: 4 });
      assert.equal(resp.status, 'incomplete', JSON.stringify(resp));
    }
    const bad = await postJson(`${url}/v1/chat/completions`, { messages, reasoning_effort: 'extreme', max_tokens: 4 });
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.json.error.param, 'reasoning_effort');
  });

  // Greedy and sampled replies, with and without tools, at each reasoning effort: the same
  // parse streamed and not, and valid fields.
  test('replies parse the same streamed and not, with valid fields', async () => {
    const runs = [
      { temperature: 0 },
      { temperature: 0, tools },
      { temperature: 1, seed: 1, tools, reasoning_effort: 'low' },
      { temperature: 1, seed: 2, reasoning_effort: 'high' },
      { temperature: 1, seed: 3, tools, tool_choice: 'auto' },
    ];
    for (const [i, run] of runs.entries()) {
      const body = { model: 'm', messages, max_tokens: 48, ...run };
      const whole = wholeChoice(await client.chat.completions.create(body));
      const streamed = await streamedChoice(client, body);
      const label = `run ${i}: ${JSON.stringify(whole)}`;
      assertValid(whole, body, label);
      assertValid(streamed, body, label);
      assert.deepEqual(comparable(streamed), comparable(whole), label);
    }
  });

  // A well-formed reply forced by a grammar over the special tokens' text, analysis then a final
  // answer, each where it belongs, streamed as not (the grammar's end stops it: the end of
  // generation <|return|> is not text a grammar writes).
  test('forced harmony replies: reasoning_content and content from the special tokens', async () => {
    const reply = '<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant<|channel|>final<|message|>Sunny.';
    const body = { model: 'm', messages, max_tokens: 64, temperature: 0, grammar: literalGrammar(reply) };
    const whole = wholeChoice(await client.chat.completions.create(body));
    const streamed = await streamedChoice(client, body);
    assertValid(whole, body, JSON.stringify(whole));
    assert.deepEqual({ reasoning: whole.reasoning, content: whole.content, finish: whole.finish },
      { reasoning: 'Hmm.', content: 'Sunny.', finish: 'stop' });
    assert.deepEqual(comparable(streamed), comparable(whole));
    // A commentary preamble then the final answer: two paragraphs of content, not run together.
    const preamble = '<|channel|>commentary<|message|>Let me see.<|end|><|start|>assistant<|channel|>final<|message|>Sunny.';
    const body2 = { ...body, grammar: literalGrammar(preamble) };
    const both = wholeChoice(await client.chat.completions.create(body2));
    assert.equal(both.content, 'Let me see.\n\nSunny.');
    assert.deepEqual(comparable(await streamedChoice(client, body2)), comparable(both));
  });

  // The harmony tokens' logits raised: replies full of real channel markup, well formed or not
  // (channels, preambles, calls to named recipients, <|call|> / <|return|> ends). Whatever the
  // parse, it is the same streamed and not, and the fields stay valid.
  test('markup-heavy replies: the same parse streamed and not, valid fields', async () => {
    const bias = {
      [tokens['<|channel|>']]: 6, [tokens['<|message|>']]: 6, [tokens['<|start|>']]: 5, [tokens['<|end|>']]: 5,
      [tokens['<|constrain|>']]: 3, [tokens['<|call|>']]: 2, [tokens['<|return|>']]: 1,
    };
    const seen = new Set();
    for (let seed = 1; seed <= 12; seed++) {
      const body = { model: 'm', messages, tools, max_tokens: 64, temperature: 1, seed, logit_bias: bias };
      const whole = wholeChoice(await client.chat.completions.create(body));
      const streamed = await streamedChoice(client, body);
      const label = `seed ${seed}: ${JSON.stringify(whole)}`;
      assertValid(whole, body, label);
      assertValid(streamed, body, label);
      assert.deepEqual(comparable(streamed), comparable(whole), label);
      seen.add(whole.finish);
      if (whole.reasoning) seen.add('reasoning');
    }
    // The bias does reach the parser: some replies end on <|call|> / <|return|> or open channels.
    assert.ok(seen.has('stop') || seen.has('tool_calls') || seen.has('reasoning'), [...seen].join(','));
  });
});
