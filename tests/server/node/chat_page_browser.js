// Debian's headless chromium driven by playwright-core, for the chat page tests
// (chat_page*.test.js). CHROMIUM_PATH: the browser (default /usr/bin/chromium).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { chromium } from 'playwright-core';

import { needs } from './helpers.js';

export const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const browserSkip = needs(chromiumPath);

// A browser with a fresh profile (playwright passes it as --user-data-dir); close() ends it and
// removes the profile.
export async function launchBrowser() {
  const profile = mkdtempSync(path.join(os.tmpdir(), 'minfer-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

// A canned chat completion stream: each delta a chunk, then one that ends the choice with
// `finish`, then usage, then [DONE].
export function sse(deltas, usage, finish = 'stop') {
  const chunk = (delta, reason) => ({
    id: 'chatcmpl-test', object: 'chat.completion.chunk', created: 0, model: 'canned',
    choices: [{ index: 0, delta, finish_reason: reason }],
  });
  const events = deltas.map((d) => chunk(d, null));
  events.push(chunk({}, finish));
  events.push({ id: 'chatcmpl-test', object: 'chat.completion.chunk', choices: [], usage });
  return events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n';
}
