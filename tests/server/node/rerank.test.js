// POST /v1/rerank (/rerank, /v1/reranking) against `minfer serve --rerank`:
//
//  - yes/no method on the tiny Qwen3 model (real vocabulary, random weights): each score equals
//    P(yes) = softmax over the "yes"/"no" logits of the pair's last position as `minfer logits`
//    computes them on the model card's prompt (tokenized by /tokenize), so the order is the
//    direct computation's; results sorted, top_n, return_documents, usage.
//  - classifier head (`make-model --reranker cls`, and the Qwen3 yes/no head): scores sorted, the
//    same alone as in a batch.
//  - errors: malformed fields and too many documents are 400s naming the field, a pair past the
//    context names its document, no --rerank names the flag, a model that cannot rerank is
//    refused at start with the reason.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { minferBin, needs, postJson, startServer, suiteServer, testData } from './helpers.js';

const qwen3Path = path.join(testData, 'models', 'qwen3-qwentok-tiny-q8_0.gguf');
const storiesPath = path.join(testData, 'models', 'stories260K.gguf');
const skip = needs(minferBin, qwen3Path, storiesPath);

// Qwen3-Reranker's model-card prompt (engine/reranker.h kQwen3RerankTemplate).
const cardPrompt = (query, document) =>
  '<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the ' +
  'Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n' +
  '<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n' +
  `<Query>: ${query}\n<Document>: ${document}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n`;

const query = 'What is a panda?';
const documents = [
  'The giant panda is a bear species endemic to China.',
  { text: 'hi' },
  'Paris is the capital of France.',
  { text: 'Bread is made of flour, water, yeast and salt.' },
  'Pandas eat bamboo.',
];
const docText = (d) => (typeof d === 'string' ? d : d.text);

function checkSorted(results, n) {
  assert.equal(results.length, n);
  assert.deepEqual([...results.map((r) => r.index)].sort((a, b) => a - b), [...Array(n).keys()]);
  for (let i = 1; i < results.length; i++) {
    assert.ok(results[i - 1].relevance_score >= results[i].relevance_score, JSON.stringify(results));
  }
}

async function tokenize(url, content, parseSpecial) {
  const r = await postJson(`${url}/tokenize`, { content, add_special: true, parse_special: parseSpecial });
  assert.equal(r.status, 200, r.text);
  return r.json.tokens;
}

// softmax over the yes/no logits of the last position, by `minfer logits` (f32 cells, as the
// server under test runs).
function directScore(dir, ids, yes, no) {
  const idsFile = path.join(dir, 'ids.txt');
  const out = path.join(dir, 'logits.bin');
  writeFileSync(idsFile, ids.join(','));
  const r = spawnSync(minferBin, ['logits', '-m', qwen3Path, '--ids-file', idsFile, '-o', out, '-t', '2', '--cache-type', 'f32']);
  assert.equal(r.status, 0, r.stderr.toString());
  const bytes = readFileSync(out);
  const logits = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
  const nVocab = logits.length / ids.length;
  const last = (ids.length - 1) * nVocab;
  return 1 / (1 + Math.exp(logits[last + no] - logits[last + yes]));
}

describe('rerank by the yes/no logits (serve --rerank)', { skip }, () => {
  const ctx = suiteServer(['--rerank', '--cache-type', 'f32', '-c', '256'], {}, qwen3Path);
  let dir;
  before(() => { dir = mkdtempSync(path.join(os.tmpdir(), 'minfer-rerank-')); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('scores equal P(yes) from minfer logits on the card prompt; sorted; usage', async () => {
    const r = await postJson(`${ctx.url}/v1/rerank`, { model: 'm', query, documents });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.object, 'list');
    checkSorted(r.json.results, documents.length);
    const [yes] = await tokenize(ctx.url, 'yes', false);
    const [no] = await tokenize(ctx.url, 'no', false);
    let tokens = 0;
    const direct = [];
    for (const d of documents) {
      const ids = await tokenize(ctx.url, cardPrompt(query, docText(d)), true);
      tokens += ids.length;
      direct.push(directScore(dir, ids, yes, no));
    }
    for (const item of r.json.results) {
      assert.ok(item.relevance_score > 0 && item.relevance_score < 1, JSON.stringify(item));
      assert.ok(Math.abs(item.relevance_score - direct[item.index]) < 1e-4,
        `document ${item.index}: ${item.relevance_score} vs ${direct[item.index]}`);
      assert.equal(item.document, undefined);
    }
    const directOrder = [...direct.keys()].sort((a, b) => direct[b] - direct[a]);
    assert.deepEqual(r.json.results.map((x) => x.index), directOrder);
    assert.equal(r.json.usage.prompt_tokens, tokens);
    assert.equal(r.json.usage.total_tokens, tokens);
  });

  test('top_n, return_documents, and the llama.cpp paths', async () => {
    const all = await postJson(`${ctx.url}/v1/rerank`, { query, documents });
    const top = await postJson(`${ctx.url}/rerank`, { query, documents, top_n: 2, return_documents: true });
    assert.equal(top.status, 200, top.text);
    assert.equal(top.json.results.length, 2);
    for (const [k, item] of top.json.results.entries()) {
      assert.equal(item.index, all.json.results[k].index);
      assert.equal(item.relevance_score, all.json.results[k].relevance_score);
      assert.deepEqual(item.document, { text: docText(documents[item.index]) });
    }
    const other = await postJson(`${ctx.url}/v1/reranking`, { query, documents, top_n: 99 });
    assert.deepEqual(other.json.results, all.json.results);
  });

  test('malformed or hostile requests are 400s naming the field', async () => {
    const cases = [
      [{ documents: ['a'] }, 'query'],
      [{ query: 1, documents: ['a'] }, 'query'],
      [{ query }, 'documents'],
      [{ query, documents: [] }, 'documents'],
      [{ query, documents: ['a', 7] }, 'documents[1]'],
      [{ query, documents: [{ txt: 'a' }] }, 'documents[0].text'],
      [{ query, documents: ['a'], top_n: 0 }, 'top_n'],
      [{ query, documents: ['a'], return_documents: 'yes' }, 'return_documents'],
      [{ query, documents: ['a'], rank_fields: ['title'] }, 'rank_fields'],
      [{ query, documents: Array(1001).fill('a') }, 'documents'],
      [{ query, documents: ['short', 'panda '.repeat(400)] }, 'documents[1]'],
    ];
    for (const [body, param] of cases) {
      const r = await postJson(`${ctx.url}/v1/rerank`, body);
      assert.equal(r.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${r.text}`);
      assert.equal(r.json.error.param, param, r.text);
    }
    const notJson = await postJson(`${ctx.url}/v1/rerank`, '{"query": ');
    assert.equal(notJson.status, 400, notJson.text);
    // The server still answers.
    const ok = await postJson(`${ctx.url}/v1/rerank`, { query, documents: ['a'] });
    assert.equal(ok.status, 200, ok.text);
  });
});

describe('rerank by a classifier head (make-model --reranker)', { skip }, () => {
  let dir;
  const servers = {};
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'minfer-rerank-head-'));
    for (const head of ['cls', 'qwen3']) {
      const file = path.join(dir, `${head}.gguf`);
      const made = spawnSync(minferBin, ['make-model', '--arch', 'qwen3', '--preset', 'tiny', '--reranker', head, '-o', file, '-t', '2']);
      assert.equal(made.status, 0, made.stderr.toString());
      servers[head] = await startServer(['--rerank'], {}, file);
    }
  });
  after(async () => {
    for (const s of Object.values(servers)) assert.equal((await s.stop()).code, 0);
    rmSync(dir, { recursive: true, force: true });
  });

  test('scores sorted, the same alone as in a batch; the head named at start', async () => {
    for (const [head, server] of Object.entries(servers)) {
      assert.match(server.stderr(), /\/v1\/rerank by classifier head/);
      const r = await postJson(`${server.url}/v1/rerank`, { query, documents });
      assert.equal(r.status, 200, r.text);
      checkSorted(r.json.results, documents.length);
      const scores = new Set(r.json.results.map((x) => x.relevance_score));
      assert.equal(scores.size, documents.length, `${head}: distinct scores ${JSON.stringify(r.json.results)}`);
      for (const item of r.json.results) {
        if (head === 'qwen3') assert.ok(item.relevance_score > 0 && item.relevance_score < 1);
        const alone = await postJson(`${server.url}/v1/rerank`, { query, documents: [documents[item.index]] });
        assert.ok(Math.abs(alone.json.results[0].relevance_score - item.relevance_score) < 1e-5,
          `${head} document ${item.index}`);
      }
    }
  });
});

describe('rerank not served', { skip }, () => {
  const ctx = suiteServer([], {}, qwen3Path);

  test('without --rerank: a 400 naming the flag', async () => {
    const r = await postJson(`${ctx.url}/v1/rerank`, { query, documents: ['a'] });
    assert.equal(r.status, 400, r.text);
    assert.match(r.json.error.message, /--rerank/);
  });

  test('a model that cannot rerank is refused at start with the reason', () => {
    const r = spawnSync(minferBin, ['serve', '-m', storiesPath, '--port', '0', '-t', '2', '--rerank'], { timeout: 30000 });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr.toString(), /--rerank: .*cannot rerank/);
  });
});
