// POST /v1/embeddings through the official openai client against `minfer serve --embeddings`:
// unit-length vectors, the same text the same vector, a batch equal to one at a time, base64 the
// same floats, `dimensions` truncated and normalized again, token-array inputs; and a server
// without --embeddings answering 400 that names the flag.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { postJson, skipReason, suiteServer } from './helpers.js';

const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

function assertClose(a, b, tol, what) {
  assert.equal(a.length, b.length, `${what}: lengths`);
  for (let i = 0; i < a.length; i++) {
    assert.ok(Math.abs(a[i] - b[i]) <= tol, `${what}[${i}]: ${a[i]} vs ${b[i]}`);
  }
}

describe('embeddings (serve --embeddings)', { skip: skipReason }, () => {
  const ctx = suiteServer(['--embeddings']);
  const texts = ['Hello, world', 'The quick brown fox jumps over the lazy dog.', 'a'];

  test('unit vectors; the same text the same vector; a batch of 3 equals one at a time', async () => {
    const batch = await ctx.client.embeddings.create({ model: 'm', input: texts, encoding_format: 'float' });
    assert.equal(batch.object, 'list');
    assert.equal(batch.data.length, 3);
    assert.ok(batch.usage.prompt_tokens > 0);
    assert.equal(batch.usage.total_tokens, batch.usage.prompt_tokens);
    for (const [i, d] of batch.data.entries()) {
      assert.equal(d.object, 'embedding');
      assert.equal(d.index, i);
      assert.ok(Math.abs(norm(d.embedding) - 1) < 1e-5, `norm ${norm(d.embedding)}`);
      const one = await ctx.client.embeddings.create({ model: 'm', input: texts[i], encoding_format: 'float' });
      const again = await ctx.client.embeddings.create({ model: 'm', input: texts[i], encoding_format: 'float' });
      assert.deepEqual(one.data[0].embedding, again.data[0].embedding);
      assertClose(d.embedding, one.data[0].embedding, 1e-5, `text ${i}`);
    }
  });

  test('base64 decodes to the same floats (the client default)', async () => {
    const floats = await ctx.client.embeddings.create({ model: 'm', input: texts[0], encoding_format: 'float' });
    const raw = await postJson(`${ctx.url}/v1/embeddings`, { input: texts[0], encoding_format: 'base64' });
    assert.equal(raw.status, 200, raw.text);
    const bytes = Buffer.from(raw.json.data[0].embedding, 'base64');
    const decoded = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4));
    assert.deepEqual(decoded, floats.data[0].embedding);
    // The openai client asks for base64 by default and decodes it itself.
    const viaClient = await ctx.client.embeddings.create({ model: 'm', input: texts[0] });
    assert.deepEqual(viaClient.data[0].embedding, floats.data[0].embedding);
  });

  test('dimensions: the first values, normalized again', async () => {
    const full = await ctx.client.embeddings.create({ model: 'm', input: texts[1], encoding_format: 'float' });
    const cut = await ctx.client.embeddings.create({ model: 'm', input: texts[1], encoding_format: 'float', dimensions: 16 });
    assert.equal(cut.data[0].embedding.length, 16);
    assert.ok(Math.abs(norm(cut.data[0].embedding) - 1) < 1e-5);
    const head = full.data[0].embedding.slice(0, 16);
    const n = norm(head);
    assertClose(cut.data[0].embedding, head.map((x) => x / n), 1e-6, 'truncated');
    const tooMany = await postJson(`${ctx.url}/v1/embeddings`, { input: 'x', dimensions: 100000 });
    assert.equal(tooMany.status, 400);
    assert.match(tooMany.json.error.message, /dimensions/);
  });

  test('token arrays and bad inputs', async () => {
    const ids = await postJson(`${ctx.url}/tokenize`, { content: texts[0] });
    const byIds = await postJson(`${ctx.url}/v1/embeddings`, { input: [ids.json.tokens, ids.json.tokens], encoding_format: 'float' });
    assert.equal(byIds.status, 200, byIds.text);
    const byText = await ctx.client.embeddings.create({ model: 'm', input: texts[0], encoding_format: 'float' });
    assertClose(byIds.json.data[1].embedding, byText.data[0].embedding, 1e-5, 'ids');
    const single = await postJson(`${ctx.url}/v1/embeddings`, { input: ids.json.tokens, encoding_format: 'float' });
    assert.equal(single.json.data.length, 1);
    for (const input of [[], '', [1e9], [['a']], 3, ['a', [1]]]) {
      const r = await postJson(`${ctx.url}/v1/embeddings`, { input });
      assert.equal(r.status, 400, `${JSON.stringify(input)}: ${r.text}`);
      assert.equal(r.json.error.type, 'invalid_request_error');
    }
    const format = await postJson(`${ctx.url}/v1/embeddings`, { input: 'x', encoding_format: 'f16' });
    assert.equal(format.status, 400);
  });
});

describe('embeddings not enabled', { skip: skipReason }, () => {
  const ctx = suiteServer([]);
  test('400 naming --embeddings', async () => {
    const r = await postJson(`${ctx.url}/v1/embeddings`, { input: 'hello' });
    assert.equal(r.status, 400);
    assert.match(r.json.error.message, /--embeddings/);
    assert.equal(r.json.error.code, 'embeddings_not_enabled');
  });
});
