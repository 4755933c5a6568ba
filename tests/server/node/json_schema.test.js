// response_format json_schema: the schema becomes a grammar, so every reply is a document the
// schema accepts. Checked with the official openai client (`chat.completions.parse` with a zod
// schema through `zodResponseFormat`, streamed and not, temperatures 0 and 1), with ajv over raw
// schemas that use every supported keyword, 8 concurrent requests against their solo answers, and
// an unsupported keyword (a 400 naming it).
//
// The model is stories260K (a real trained model) so the text inside the constraints is its own.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';

import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';

import { minferBin, needs, postJson, readSse, suiteServer, testData } from './helpers.js';

const storiesPath = path.join(testData, 'models', 'stories260K.gguf');
const skip = needs(minferBin, storiesPath);

const messages = [
  { role: 'system', content: 'You answer in JSON.' },
  { role: 'user', content: 'Tell me about Lily.' },
];
const maxTokens = 1500;

const Person = z.object({
  name: z.string().max(12),
  age: z.number().int().min(0).max(120),
  color: z.enum(['red', 'green', 'blue']),
  tags: z.array(z.string().max(6)).max(3),
  nickname: z.string().max(5).nullable(),
  id: z.string().uuid(),
  born: z.string().date(),
});

// Raw schemas between them using every keyword the converter supports.
const rawSchemas = [
  {
    type: 'object',
    properties: {
      title: { type: 'string', minLength: 1, maxLength: 10 },
      code: { type: 'string', pattern: '^[A-Z]{2}-[0-9]{2,4}$' },
      level: { type: 'integer', minimum: -3, maximum: 3 },
      ratio: { type: 'number' },
      flag: { type: ['boolean', 'null'] },
      kind: { enum: ['a', 'b', 7] },
      fixed: { const: { v: 1 } },
      when: { type: 'string', format: 'date-time' },
      at: { type: 'string', format: 'time' },
    },
    required: ['title', 'code', 'level', 'kind', 'fixed', 'when', 'at'],
    additionalProperties: false,
  },
  {
    $defs: {
      node: {
        type: 'object',
        properties: {
          v: { type: 'integer', exclusiveMinimum: 0, exclusiveMaximum: 100 },
          kids: { type: 'array', items: { $ref: '#/$defs/node' }, maxItems: 2 },
        },
        required: ['v'],
        additionalProperties: false,
      },
    },
    type: 'object',
    properties: { root: { $ref: '#/$defs/node' } },
    required: ['root'],
    additionalProperties: false,
  },
  {
    type: 'array',
    prefixItems: [{ type: 'string', maxLength: 4 }, { oneOf: [{ type: 'integer' }, { type: 'null' }] }],
    items: { anyOf: [{ type: 'boolean' }, { type: 'string', maxLength: 3 }] },
    minItems: 2,
    maxItems: 4,
  },
  {
    allOf: [
      { type: 'object', properties: { a: { type: 'string', maxLength: 3 } }, required: ['a'] },
      { properties: { b: { type: 'integer', minimum: 10, maximum: 12 } }, required: ['b'] },
    ],
  },
];

describe('response_format json_schema', { skip }, () => {
  const ctx = suiteServer(['-np', '4'], {}, storiesPath);
  const ajv = new Ajv2020({ strict: false });
  addFormats(ajv);

  test('chat.completions.parse with a zod schema, streamed and not, temperatures 0 and 1', async () => {
    for (const temperature of [0, 1]) {
      for (const seed of [1, 2, 3]) {
        const request = {
          model: 'm', messages, temperature, seed, max_tokens: maxTokens,
          response_format: zodResponseFormat(Person, 'person'),
        };
        const done = await ctx.client.chat.completions.parse(request);
        const message = done.choices[0].message;
        assert.equal(done.choices[0].finish_reason, 'stop', message.content);
        assert.ok(message.parsed, message.content);
        assert.deepEqual(Person.parse(message.parsed), message.parsed);

        const stream = ctx.client.chat.completions.stream(request);
        const streamed = await stream.finalChatCompletion();
        assert.equal(streamed.choices[0].message.content, message.content);
        assert.deepEqual(streamed.choices[0].message.parsed, message.parsed);
      }
    }
  });

  test('every supported keyword: replies validate with ajv, streamed and not', async () => {
    for (const [i, schema] of rawSchemas.entries()) {
      const validate = ajv.compile(schema);
      for (const temperature of [0, 1]) {
        const body = {
          messages, temperature, seed: 7 + i, max_tokens: maxTokens,
          response_format: { type: 'json_schema', json_schema: { name: `s${i}`, schema, strict: true } },
        };
        const r = await postJson(`${ctx.url}/v1/chat/completions`, body);
        assert.equal(r.status, 200, r.text);
        const content = r.json.choices[0].message.content;
        assert.equal(r.json.choices[0].finish_reason, 'stop', content);
        const value = JSON.parse(content);
        assert.ok(validate(value), `schema ${i}: ${content}\n${JSON.stringify(validate.errors)}`);

        const res = await fetch(`${ctx.url}/v1/chat/completions`, {
          method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }),
        });
        const { events } = await readSse(res);
        const text = events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('');
        assert.equal(text, content);
      }
    }
  });

  test('8 concurrent constrained requests equal their solo answers', async () => {
    const schema = rawSchemas[0];
    const body = (seed) => ({
      messages, temperature: 1, seed, max_tokens: maxTokens,
      response_format: { type: 'json_schema', json_schema: { name: 'c', schema } },
    });
    const solo = [];
    for (let seed = 0; seed < 8; ++seed) {
      solo.push((await postJson(`${ctx.url}/v1/chat/completions`, body(seed))).json.choices[0].message.content);
    }
    const together = await Promise.all(
      [...Array(8).keys()].map((seed) => postJson(`${ctx.url}/v1/chat/completions`, body(seed))));
    assert.deepEqual(together.map((r) => r.json.choices[0].message.content), solo);
  });

  test('an unsupported keyword is a 400 naming it; a missing schema is a 400', async () => {
    const r = await postJson(`${ctx.url}/v1/chat/completions`, {
      messages, max_tokens: 8,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { a: { not: {} } } } } },
    });
    assert.equal(r.status, 400, r.text);
    assert.match(r.json.error.message, /unsupported JSON Schema keyword 'not' at #\/properties\/a/);
    assert.equal(r.json.error.param, 'response_format');
    const missing = await postJson(`${ctx.url}/v1/chat/completions`, {
      messages, max_tokens: 8, response_format: { type: 'json_schema', json_schema: { name: 'x' } },
    });
    assert.equal(missing.status, 400, missing.text);
  });
});
