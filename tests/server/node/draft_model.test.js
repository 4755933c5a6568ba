// serve -md: speculative decoding by a draft model, batched with the other sequences. With the
// target itself as its draft the greedy text is the same as without it (speculative.n_max 0) and
// every draft is accepted; timings and /metrics count the drafts; sampled and streamed requests
// complete; a request may ask for prompt lookup instead (spec_ngram). A draft of another
// vocabulary, or -md with --spec-ngram, is refused at start with a clear message.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { metrics, minferBin, modelPath, postJson, skipReason, streamed, suiteServer, testData } from './helpers.js';

const prompt = 'Once upon a time there was a little cat who liked the sea.';

async function complete(url, extra = {}) {
  const r = await postJson(`${url}/v1/completions`, { prompt, max_tokens: 40, temperature: 0, ...extra });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

// Runs `minfer serve` with these arguments until it exits: its exit code and stderr.
function serveExit(args) {
  return new Promise((resolve) => {
    const proc = spawn(minferBin, ['serve', '--port', '0', '-t', '2', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    proc.stderr.on('data', (d) => { stderr += d.toString(); });
    const timer = setTimeout(() => proc.kill('SIGKILL'), 30000);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

describe('serve -md (draft model)', { skip: skipReason }, () => {
  const ctx = suiteServer(['-np', '2', '-md', modelPath, '--draft-max', '6']);

  test('greedy text is the same as without it, and every draft of itself is accepted', async () => {
    const spec = await complete(ctx.url);
    const plain = await complete(ctx.url, { 'speculative.n_max': 0 });
    assert.equal(spec.choices[0].text, plain.choices[0].text);
    assert.equal(spec.usage.completion_tokens, plain.usage.completion_tokens);
    assert.ok(spec.timings.draft_n > 0, JSON.stringify(spec.timings));
    assert.equal(spec.timings.draft_n_accepted, spec.timings.draft_n, JSON.stringify(spec.timings));
    assert.equal(plain.timings.draft_n, undefined);
    // Prompt lookup instead, on request: the same text again.
    const lookup = await complete(ctx.url, { spec_ngram: 1 });
    assert.equal(lookup.choices[0].text, plain.choices[0].text);
  });

  test('speculating beside another request, both give their own text; metrics count', async () => {
    const chatText = async (extra) => {
      const body = { messages: [{ role: 'user', content: 'Tell me about the sea.' }], max_tokens: 24, temperature: 0, ...extra };
      const r = await postJson(`${ctx.url}/v1/chat/completions`, body);
      assert.equal(r.status, 200, r.text);
      return r.json.choices[0].message.content;
    };
    const [alone, plain] = [await chatText({ 'speculative.n_max': 0 }), await complete(ctx.url, { 'speculative.n_max': 0 })];
    const [a, c] = await Promise.all([complete(ctx.url), chatText({})]);
    assert.equal(a.choices[0].text, plain.choices[0].text);
    assert.equal(c, alone);
    const m = await metrics(ctx.url);
    assert.ok(m.get('vllm:spec_decode_num_draft_tokens_total') > 0, m.text);
    assert.ok(m.get('vllm:spec_decode_num_accepted_tokens_total') > 0, m.text);
  });

  test('sampled and streamed requests complete with drafts accepted', async () => {
    const sampled = await complete(ctx.url, { temperature: 0.9, seed: 7, 'speculative.p_min': 0.0 });
    assert.ok(sampled.usage.completion_tokens > 0);
    assert.ok(sampled.timings.draft_n_accepted > 0, JSON.stringify(sampled.timings));
    const stream = await streamed(`${ctx.url}/v1/completions`, { prompt, max_tokens: 40, temperature: 0 });
    assert.equal(stream.status, 200);
    assert.ok(stream.done);
    assert.ok(stream.events.at(-1).timings.draft_n > 0, JSON.stringify(stream.events.at(-1)));
    const plain = await complete(ctx.url, { 'speculative.n_max': 0 });
    assert.equal(stream.text, plain.choices[0].text);
  });
});

describe('serve -md refusals', { skip: skipReason }, () => {
  test('a draft of another vocabulary is refused at start', async () => {
    const other = path.join(testData, 'models', 'stories260K.gguf');
    const r = await serveExit(['-m', modelPath, '-md', other]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /vocabulary/);
    assert.match(r.stderr, /stories260K\.gguf/);
  });

  test('-md with --spec-ngram is refused at start', async () => {
    const r = await serveExit(['-m', modelPath, '-md', modelPath, '--spec-ngram', '2']);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /--spec-ngram/);
  });
});
