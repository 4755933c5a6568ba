// Starts a real `minfer serve` on a free loopback port for the tests in this folder.
// MINFER_BIN: the binary (default <repo>/build/minfer); MINFER_TEST_DATA: the shared data folder
// (default <repo>/../shared). Tests skip when the model is missing, except in CI (see skipOrFail).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';

import OpenAI from 'openai';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');

export const minferBin = process.env.MINFER_BIN || path.join(repo, 'build', 'minfer');
export const testData = process.env.MINFER_TEST_DATA || path.resolve(repo, '..', 'shared');
export const modelPath = path.join(testData, 'models', 'qwen2.5-qwentok-tiny-q8_0.gguf');

// In CI (CI=true, which .ci/run exports) a missing prerequisite fails: a suite that skips checks
// nothing, and CI must not pass for it. skipOrFail(reason) returns the reason (for a test's
// `skip`) locally, and in CI throws it, which fails the test file that asked, naming what is
// missing.
export const inCI = process.env.CI === 'true';
export function skipOrFail(reason) {
  if (inCI) throw new Error(`CI=true: ${reason}; missing prerequisites fail in CI instead of skipping`);
  return reason;
}

// false when every path exists, else skipOrFail('needs <the missing paths>').
export function needs(...paths) {
  const missing = paths.filter((p) => !existsSync(p));
  return missing.length === 0 ? false : skipOrFail(`needs ${missing.join(' and ')}`);
}

export const skipReason = needs(minferBin, modelPath);

// Spawns the server and resolves once /health would answer 200. `env`: extra environment
// variables for the server process; `model`: another GGUF file to serve (null: no -m, for
// --models-dir in extraArgs).
export async function startServer(extraArgs = [], env = {}, model = modelPath) {
  const args = ['serve', ...(model === null ? [] : ['-m', model]), '--port', '0', '-t', '2', ...extraArgs];
  const proc = spawn(minferBin, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  let stderr = '';
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    let listening = null;
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${stderr}`)), 30000);
    proc.stderr.on('data', (d) => {
      stderr += d.toString();
      const m = stderr.match(/listening on (http:\/\/[0-9.]+:\d+)/);
      if (m) listening = m[1];
      if (listening && stderr.includes('minfer serve: ready')) {
        clearTimeout(timer);
        resolve(listening);
      }
    });
    proc.on('exit', () => {
      clearTimeout(timer);
      reject(new Error(`server exited early:\n${stderr}`));
    });
  });
  return {
    url,
    port: Number(new URL(url).port),
    proc,
    stderr: () => stderr,
    exited,
    // SIGTERM, then the exit status ({code, signal}).
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 15000);
      const r = await exited;
      clearTimeout(timer);
      return r;
    },
  };
}

// Inside a describe(): a server started before its tests and stopped after them (exit status 0).
// The returned object's `server`, `url` and `client` (OpenAI's SDK, with the server's --api-key
// if extraArgs give one) are set once it runs. `model` may be a function that returns the path
// once the describe's earlier before() hooks have run (a model they make).
export function suiteServer(extraArgs = [], env = {}, model = modelPath) {
  const ctx = { server: null, url: null, client: null };
  const keyAt = extraArgs.indexOf('--api-key');
  const apiKey = keyAt >= 0 ? extraArgs[keyAt + 1] : 'none';
  before(async () => {
    ctx.server = await startServer(extraArgs, env, typeof model === 'function' ? model() : model);
    ctx.url = ctx.server.url;
    ctx.client = new OpenAI({ baseURL: `${ctx.url}/v1`, apiKey, maxRetries: 0 });
  });
  after(async () => {
    if (ctx.server) assert.equal((await ctx.server.stop()).code, 0);
  });
  return ctx;
}

export async function postJson(url, body, headers = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { status: res.status, json, text, headers: res.headers };
}

// Reads an SSE response to the end: the parsed data events and whether [DONE] came last.
export async function readSse(res) {
  const text = await res.text();
  const events = [];
  let done = false;
  for (const block of text.split('\n\n')) {
    const line = block.trim();
    if (!line) continue;
    if (!line.startsWith('data: ')) throw new Error(`not an SSE data line: ${line}`);
    const data = line.slice(6);
    if (data === '[DONE]') {
      done = true;
      continue;
    }
    if (done) throw new Error('data after [DONE]');
    events.push(JSON.parse(data));
  }
  return { events, done };
}

// POSTs a streamed request and reads it to the end: its status, the parsed data events, whether
// [DONE] came last, and the text of the events' first choice (completions' text or chat deltas).
export async function streamed(url, body) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  const { events, done } = await readSse(res);
  const text = events.map((e) => e.choices?.[0]?.text ?? e.choices?.[0]?.delta?.content ?? '').join('');
  return { status: res.status, events, done, text };
}

export async function metrics(url) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const values = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([^{\s]+)(\{[^}]*\})?\s+(\S+)$/);
    if (m) values[m[1] + (m[2] || '')] = Number(m[3]);
  }
  return { text, values, get: (name) => Object.entries(values).find(([k]) => k === name || k.startsWith(name + '{'))?.[1] };
}

export async function waitFor(predicate, timeoutMs = 5000, stepMs = 20) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await predicate()) return true;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  return false;
}
