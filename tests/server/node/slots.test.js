// The slot API (llama-server's POST /slots/{id}?action=save|restore|erase) over --slot-save-path:
// a slot's state saved, erased, restored into another slot and into a restarted server gives the
// same greedy reply with the prompt taken from the restored cells; names that would leave the
// folder are refused; without --slot-save-path the API answers 501.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { postJson, skipReason, startServer, suiteServer } from './helpers.js';

const prompt = 'The quick brown fox jumps over the lazy dog. '.repeat(6);

describe('minfer serve slots', { skip: skipReason }, () => {
  let dir;
  let server;
  let url;
  const complete = (body) => postJson(`${url}/v1/completions`, { prompt, max_tokens: 8, temperature: 0, ...body });
  const slot = (id, action, body = {}) => postJson(`${url}/slots/${id}?action=${action}`, body);

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'minfer-slots-'));
    server = await startServer(['-np', '2', '--slot-save-path', dir]);
    url = server.url;
  });
  after(async () => {
    if (server) await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('save, erase, restore into another slot and into a restarted server', async () => {
    const first = await complete({ id_slot: 0 });
    assert.equal(first.status, 200, first.text);
    const n_prompt = first.json.usage.prompt_tokens;

    const saved = await slot(0, 'save', { filename: 'fox.bin' });
    assert.equal(saved.status, 200, saved.text);
    assert.equal(saved.json.id_slot, 0);
    assert.equal(saved.json.filename, 'fox.bin');
    assert.ok(saved.json.n_saved >= n_prompt, saved.text);
    assert.ok(saved.json.n_written > 0);
    assert.equal(typeof saved.json.timings.save_ms, 'number');
    assert.ok(existsSync(path.join(dir, 'fox.bin')));
    assert.ok(!existsSync(path.join(dir, 'fox.bin.tmp')));

    const erased = await slot(0, 'erase');
    assert.equal(erased.status, 200, erased.text);
    assert.deepEqual(erased.json, { id_slot: 0, n_erased: saved.json.n_saved });

    const restored = await slot(1, 'restore', { filename: 'fox.bin' });
    assert.equal(restored.status, 200, restored.text);
    assert.equal(restored.json.id_slot, 1);
    assert.equal(restored.json.n_restored, saved.json.n_saved);
    assert.equal(typeof restored.json.timings.restore_ms, 'number');
    const again = await complete({ id_slot: 1 });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.json.choices[0].text, first.json.choices[0].text);
    assert.equal(again.json.usage.prompt_tokens_details.cached_tokens, n_prompt - 1);

    // A new server process: the file alone carries the state.
    await server.stop();
    server = await startServer(['-np', '2', '--slot-save-path', dir]);
    url = server.url;
    const back = await slot(0, 'restore', { filename: 'fox.bin' });
    assert.equal(back.status, 200, back.text);
    assert.equal(back.json.n_restored, saved.json.n_saved);
    const after_restart = await complete({ id_slot: 0 });
    assert.equal(after_restart.status, 200, after_restart.text);
    assert.equal(after_restart.json.choices[0].text, first.json.choices[0].text);
    assert.equal(after_restart.json.usage.prompt_tokens_details.cached_tokens, n_prompt - 1);
  });

  test('names that would leave the folder are refused with 400', async () => {
    for (const filename of ['../escape.bin', '/etc/passwd', '', '..', 'a/b.bin', 'a\\b.bin']) {
      const r = await slot(0, 'save', { filename });
      assert.equal(r.status, 400, `${filename}: ${r.text}`);
      assert.match(r.json.error.message, /filename/);
    }
    assert.ok(!existsSync(path.join(dir, '..', 'escape.bin')));
    const missing = await slot(0, 'save', {});
    assert.equal(missing.status, 400);
  });

  test('bad actions, slots and files', async () => {
    const action = await slot(0, 'copy', { filename: 'x.bin' });
    assert.equal(action.status, 400);
    assert.match(action.json.error.message, /expected save, restore or erase/);
    const noSlot = await slot(7, 'save', { filename: 'x.bin' });
    assert.equal(noSlot.status, 400);
    assert.match(noSlot.json.error.message, /slot 7 does not exist/);
    const noFile = await slot(0, 'restore', { filename: 'never-saved.bin' });
    assert.equal(noFile.status, 404, noFile.text);
    const pinned = await complete({ id_slot: 5 });
    assert.equal(pinned.status, 400, pinned.text);
  });
});

describe('minfer serve without --slot-save-path', { skip: skipReason }, () => {
  const ctx = suiteServer(['-np', '1']);

  test('slot actions answer 501 naming the flag', async () => {
    const r = await postJson(`${ctx.url}/slots/0?action=save`, { filename: 'x.bin' });
    assert.equal(r.status, 501, r.text);
    assert.match(r.json.error.message, /--slot-save-path/);
  });
});
