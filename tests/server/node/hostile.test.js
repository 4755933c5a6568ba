// Hostile requests (DESIGN.md invariant 13): bodies nested a million deep, grammars of 50,000
// nested groups or 200,000 rules, deep schemas and tools, oversized lists — each gets a 4xx that
// names the limit it broke, within a second, and the server answers /health after every one.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { postJson, skipReason, suiteServer } from './helpers.js';

const user = [{ role: 'user', content: 'hi' }];
const deepArray = (n) => '['.repeat(n) + ']'.repeat(n);
const deepObject = (n) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
// A schema nesting `n` arrays, as JSON text (never built as an object: JSON.stringify recurses).
const deepSchema = (n) => '{"type":"array","items":'.repeat(n) + '{"type":"integer"}' + '}'.repeat(n);
const nestedParameters = (n) => '{"type":"object","properties":{"a":'.repeat(n) + '{"type":"integer"}' + '}}'.repeat(n);
// JSON text of an object whose field `key` holds the raw JSON text `raw`.
const withRaw = (body, key, raw) => JSON.stringify(body).slice(0, -1) + `,"${key}":${raw}}`;

// Every hostile request: [name, path, body text, status, what the error message says].
function hostileRequests() {
  const bodyDepth = /nests arrays and objects deeper than the limit of 512 levels/;
  const chat = { messages: user, max_tokens: 2 };
  const rules = ['root ::= r0'];
  for (let i = 0; i < 200000; i++) rules.push(`r${i} ::= "a" r${i + 1}`);
  const tool = (parameters) => `{"type":"function","function":{"name":"f","parameters":${parameters}}}`;
  return [
    ['chat: a 100,000-deep array', '/v1/chat/completions', withRaw(chat, 'extra', deepArray(100000)), 400, bodyDepth],
    ['chat: a 100,000-deep object', '/v1/chat/completions', withRaw(chat, 'extra', deepObject(100000)), 400, bodyDepth],
    ['chat: a 1,000,000-deep array', '/v1/chat/completions', withRaw(chat, 'extra', deepArray(1000000)), 400, bodyDepth],
    ['chat: a 20,000-deep array', '/v1/chat/completions', withRaw(chat, 'extra', deepArray(20000)), 400, bodyDepth],
    ['apply-template: a 100,000-deep array', '/apply-template', withRaw({ messages: user }, 'extra', deepArray(100000)), 400, bodyDepth],
    ['completions: a 100,000-deep array', '/v1/completions', withRaw({ prompt: 'a' }, 'extra', deepArray(100000)), 400, bodyDepth],
    ['messages: a 100,000-deep array', '/v1/messages', withRaw({ model: 'm', max_tokens: 2, messages: user }, 'extra', deepArray(100000)), 400, bodyDepth],
    ['responses: a 100,000-deep array', '/v1/responses', withRaw({ input: 'hi' }, 'extra', deepArray(100000)), 400, bodyDepth],
    ['tokenize: a 100,000-deep array', '/tokenize', withRaw({ content: 'hi' }, 'extra', deepArray(100000)), 400, bodyDepth],
    ['embeddings: a 100,000-deep array', '/v1/embeddings', withRaw({ input: 'hi' }, 'extra', deepArray(100000)), 400, bodyDepth],
    ['completions: a grammar of 50,000 nested groups', '/v1/completions',
      JSON.stringify({ prompt: 'a', max_tokens: 2, grammar: 'root ::= ' + '('.repeat(50000) + '"a"' + ')'.repeat(50000) }),
      400, /groups nested deeper than the limit of 256/],
    ['completions: a grammar of 200,000 rules (3 MB)', '/v1/completions',
      JSON.stringify({ prompt: 'a', max_tokens: 2, grammar: rules.join('\n') }), 400, /the grammar is \d+ bytes, over the limit of 1048576/],
    ['completions: a grammar of 100,000 groups (600 KB)', '/v1/completions',
      JSON.stringify({ prompt: 'a', max_tokens: 2, grammar: 'root ::= ' + '("a") '.repeat(100000) }), 400, /the grammar has more than 65536 rules/],
    ['completions: a 1.5 MB grammar', '/v1/completions',
      JSON.stringify({ prompt: 'a', max_tokens: 2, grammar: 'root ::= "' + 'a'.repeat(1536 * 1024) + '"' }),
      400, /the grammar is \d+ bytes, over the limit of 1048576/],
    ['completions: a 10 MB grammar', '/v1/completions',
      JSON.stringify({ prompt: 'a', grammar: 'root ::= "' + 'a'.repeat(10 << 20) + '"' }),
      413, /the request body is over the limit of 8388608 bytes/],
    ['chat: a 100,000-deep json_schema', '/v1/chat/completions',
      withRaw(chat, 'response_format', `{"type":"json_schema","json_schema":{"name":"s","schema":${deepSchema(100000)}}}`), 400, bodyDepth],
    ['chat: a 20,000-deep json_schema', '/v1/chat/completions',
      withRaw(chat, 'response_format', `{"type":"json_schema","json_schema":{"name":"s","schema":${deepSchema(20000)}}}`), 400, bodyDepth],
    ['chat: a 100-deep json_schema', '/v1/chat/completions',
      withRaw(chat, 'response_format', `{"type":"json_schema","json_schema":{"name":"s","schema":${deepSchema(100)}}}`), 400,
      /nesting deeper than the limit of 64/],
    ['chat: a pattern of 100,000 nested groups', '/v1/chat/completions',
      withRaw(chat, 'response_format', JSON.stringify({ type: 'json_schema', json_schema: { name: 's', schema: { type: 'string', pattern: '('.repeat(100000) + 'a' + ')'.repeat(100000) } } })),
      400, /groups nested deeper than the limit of 64/],
    ['chat: tools whose parameters nest 50,000 objects', '/v1/chat/completions',
      withRaw(chat, 'tools', `[${tool(nestedParameters(50000))}]`), 400, bodyDepth],
    ['chat: tools whose parameters nest 100 objects', '/v1/chat/completions',
      withRaw({ ...chat, tool_choice: 'required' }, 'tools', `[${tool(nestedParameters(100))}]`), 400, /nesting deeper than the limit of 64/],
    ['chat: 513 tools', '/v1/chat/completions',
      withRaw(chat, 'tools', `[${Array(513).fill(tool('{"type":"object"}')).join(',')}]`), 400, /'tools' holds 513 tools; the limit is 512/],
    ['chat: tool-call arguments nested 100,000 deep', '/v1/chat/completions',
      JSON.stringify({ max_tokens: 2, messages: [...user, { role: 'assistant', tool_calls: [{ type: 'function', id: 'c', function: { name: 'f', arguments: deepArray(100000) } }] }] }),
      400, /arguments' nests arrays and objects deeper than the limit of 505 levels/],
    ['chat: an object of 90,000 keys', '/v1/chat/completions',
      withRaw(chat, 'extra', '{' + Array.from({ length: 90000 }, (_, i) => `"${i}":1`).join(',') + '}'),
      400, /holds an object of more than 4096 keys, the limit/],
    ['chat: logit_bias of 5,000 tokens', '/v1/chat/completions',
      withRaw(chat, 'logit_bias', '{' + Array.from({ length: 5000 }, (_, i) => `"${i}":-1`).join(',') + '}'),
      400, /holds an object of more than 4096 keys, the limit/],
    ['embeddings: 2,049 inputs', '/v1/embeddings', JSON.stringify({ input: Array(2049).fill('hi') }), 400,
      /'input' holds 2049 inputs; the limit is 2048/],
    ['chat: 17 stop strings', '/v1/chat/completions', JSON.stringify({ ...chat, stop: Array(17).fill('x') }), 400, /'stop' may hold at most 16 strings/],
    ['chat: a 5,000-byte stop string', '/v1/chat/completions', JSON.stringify({ ...chat, stop: 'x'.repeat(5000) }), 400,
      /a 'stop' string of 5000 bytes is over the limit of 4096/],
    ['messages: 17 stop sequences', '/v1/messages', JSON.stringify({ model: 'm', max_tokens: 2, messages: user, stop_sequences: Array(17).fill('x') }),
      400, /'stop_sequences' may hold at most 16 strings/],
  ];
}

describe('hostile requests', { skip: skipReason }, () => {
  const ctx = suiteServer(['--embeddings']);

  for (const [name, path, body, status, message] of hostileRequests()) {
    test(name, async () => {
      const start = Date.now();
      const r = await postJson(`${ctx.url}${path}`, body);
      const ms = Date.now() - start;
      assert.equal(r.status, status, r.text.slice(0, 300));
      const error = r.json?.error;
      const text = typeof error?.message === 'string' ? error.message : r.text;
      assert.match(text, message);
      assert.ok(ms < 1000, `answered in ${ms} ms`);
      assert.equal((await fetch(`${ctx.url}/health`)).status, 200);
    });
  }

  test('a request within every limit still works', async () => {
    const r = await postJson(`${ctx.url}/v1/chat/completions`, withRaw({ messages: user, max_tokens: 2, stop: Array(16).fill('x'.repeat(4096)) }, 'extra', deepArray(500)));
    assert.equal(r.status, 200, r.text.slice(0, 300));
  });
});
