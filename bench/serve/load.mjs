#!/usr/bin/env node
// Load generator for `minfer serve`: total generated tok/s, each stream's decode rate after its
// first token, time to first token (p50/p99) and the gaps between a stream's tokens (p99/max) at
// several numbers of concurrent clients.
//
//   node bench/serve/load.mjs --model M.gguf [--bin build/minfer] [--threads 2]
//        [--concurrency 1,4,8,16] [--max-tokens 64] [--rounds 2] [--stream 1]
//        [--ctx-per-seq 1024] [--temperature 0] [--url http://host:port]
//
// Without --url it starts `minfer serve` itself (-np = the largest concurrency). Each client sends
// `rounds` requests one after another (greedy, a distinct short prompt each, exactly max-tokens
// generated: ignore_eos is emulated by a stop-free greedy run of a random-weight model). The rate
// counts completion tokens over the wall time of the whole level (prefill included). "decode/stream"
// is the median over requests of (tokens - 1) / (time of the last chunk - time of the first): one
// stream's rate after its first token, the figure to set beside `minfer bench -n N` tg on the same
// model and thread count; "server decode/stream" is the same rate by the server's own clock (its
// `timings`), so a gap between the two is delivery, not the steps. "ITL" (inter-token latency) is
// the time between two consecutive chunks of text of one stream, over every stream of the level:
// its max shows a step that stalls every stream (e.g. memory taken all at once). The client runs
// on the server's machine, so it is kept light (node:http, not fetch). --stream 0 asks for whole
// replies (no TTFT, decode/stream nor ITL then). --temperature T samples (the server's default
// top-k / top-p / min-p, seed 1) to set beside `minfer run --temp T`; the length stays exact
// unless the random model samples an end-of-generation token.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  const text = readFileSync(new URL(import.meta.url), 'utf8');
  const header = text.split('\n').slice(1).filter((l) => l.startsWith('//'));
  console.log(header.map((l) => l.slice(3)).join('\n'));
  process.exit(0);
}

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const levels = (args.concurrency || '1,4,8,16').split(',').map(Number);
const maxTokens = Number(args['max-tokens'] || 64);
const rounds = Number(args.rounds || 2);
const stream = (args.stream ?? '1') !== '0';
const temperature = Number(args.temperature || 0);

async function start() {
  if (args.url) return { url: args.url, stop: async () => {} };
  const np = Math.max(...levels);
  const bin = args.bin || 'build/minfer';
  const proc = spawn(bin, ['serve', '-m', args.model, '--port', '0', '-t', String(args.threads || 2),
    '--parallel', String(np), '--ctx-per-seq', String(args['ctx-per-seq'] || 1024),
    '--no-prefix-cache', ...(args['block-size'] ? ['--block-size', args['block-size']] : [])], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const url = await new Promise((resolve, reject) => {
    proc.stderr.on('data', (d) => {
      err += d;
      const m = err.match(/listening on (http:\/\/[0-9.]+:\d+)/);
      if (m && err.includes('ready')) resolve(m[1]);
    });
    proc.on('exit', () => reject(new Error(err)));
  });
  return { url, stop: async () => { proc.kill('SIGTERM'); await new Promise((r) => proc.on('exit', r)); } };
}

// One POST with node:http, the body handed over as it arrives. (fetch's web streams cost the
// client about 1.4 ms of CPU per streamed token on the 2-core VMs, taken from the server's two
// threads while it computed the next token: a tenth of a 0.5B decode step.)
function post(url, body, onData) {
  return new Promise((resolve, reject) => {
    // A connection per request (agent: false): llama-server closes a kept-alive connection after a
    // streamed reply, which node's default agent would reuse and see reset.
    const req = http.request(`${url}/v1/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, agent: false,
    }, (res) => {
      res.setEncoding('utf8');
      res.on('data', onData);
      res.on('end', resolve);
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

async function one(url, prompt) {
  const t0 = performance.now();
  const body = { prompt, max_tokens: maxTokens, temperature, stream,
    ...(temperature > 0 ? { seed: 1 } : {}),
    ...(stream ? { stream_options: { include_usage: true } } : {}) };
  let buffer = '';
  if (!stream) {
    await post(url, body, (d) => { buffer += d; });
    return { ttft: null, decode: null, serverDecode: null, gaps: [],
      tokens: JSON.parse(buffer).usage.completion_tokens };
  }
  let ttft = null;
  let tLast = null;
  let tokens = 0;
  let timings = null;
  const gaps = [];  // ms between consecutive chunks of text
  await post(url, body, (d) => {
    buffer += d;
    let cut;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const line = buffer.slice(0, cut).trim();
      buffer = buffer.slice(cut + 2);
      if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
      const chunk = JSON.parse(line.slice(6));
      if (chunk.choices?.[0]?.text) {
        const t = performance.now() - t0;
        if (tLast !== null) gaps.push(t - tLast);
        tLast = t;
        if (ttft === null) ttft = tLast;
      }
      if (chunk.usage) tokens = chunk.usage.completion_tokens;
      if (chunk.timings) timings = chunk.timings;
    }
  });
  const span = ttft !== null && tLast > ttft ? (tLast - ttft) / 1000 : null;
  // The server's own clock: predicted_ms runs from the first token to the last.
  const serverDecode = timings && timings.predicted_ms > 0
    ? (timings.predicted_n - 1) / (timings.predicted_ms / 1000) : null;
  return { ttft: ttft ?? performance.now() - t0, decode: span ? (tokens - 1) / span : null,
    serverDecode, tokens, gaps };
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

const server = await start();
await one(server.url, 'warm up');
const rows = [];
for (const c of levels) {
  const t0 = performance.now();
  const results = await Promise.all(Array.from({ length: c }, async (_, i) => {
    const out = [];
    for (let r = 0; r < rounds; ++r) out.push(await one(server.url, `Client ${i} round ${r}: hello`));
    return out;
  }));
  const secs = (performance.now() - t0) / 1000;
  const flat = results.flat();
  const tokens = flat.reduce((a, r) => a + r.tokens, 0);
  const ttfts = flat.map((r) => r.ttft).filter((t) => t !== null);
  const decodes = flat.map((r) => r.decode).filter((d) => d !== null);
  const serverDecodes = flat.map((r) => r.serverDecode).filter((d) => d !== null);
  const gaps = flat.flatMap((r) => r.gaps);
  rows.push({ c, tokens, secs, rate: tokens / secs, decode: decodes.length ? pct(decodes, 50) : NaN,
    serverDecode: serverDecodes.length ? pct(serverDecodes, 50) : NaN,
    p50: ttfts.length ? pct(ttfts, 50) : NaN, p99: ttfts.length ? pct(ttfts, 99) : NaN,
    itl99: gaps.length ? pct(gaps, 99) : NaN, itlMax: gaps.length ? Math.max(...gaps) : NaN });
  console.error(`streams ${c}: ${tokens} tokens in ${secs.toFixed(1)} s`);
}
await server.stop();
const base = rows[0].rate;
console.log('| streams | generated tok/s | vs 1 stream | decode/stream tok/s | server decode/stream | TTFT p50 (ms) | TTFT p99 (ms) | ITL p99 (ms) | ITL max (ms) |');
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(`| ${r.c} | ${r.rate.toFixed(1)} | ${(r.rate / base).toFixed(2)}x | ${r.decode.toFixed(1)} | ${r.serverDecode.toFixed(1)} | ${r.p50.toFixed(0)} | ${r.p99.toFixed(0)} | ${r.itl99.toFixed(1)} | ${r.itlMax.toFixed(1)} |`);
}
