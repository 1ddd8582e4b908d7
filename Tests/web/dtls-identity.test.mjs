// The browser's DTLS identity (js/runtime/dtls-identity.js; not given to calls yet, docs/security.md says why): made
// once, kept, renewed before it lapses; a store that fails costs only stability; each page takes its own slot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IDENTITY_LIFETIME_MS, IDENTITY_RENEW_BEFORE_MS, loadIdentity } from '../../Sources/DuetWeb/Web/js/runtime/dtls-identity.js';

const DAY = 24 * 3600 * 1000;

function fakes({ kept, getFails = false, putFails = false, now = 1_000 * DAY }) {
  const log = { generated: [], put: [], warned: [] };
  const store = {
    async get() { if (getFails) throw new Error('no IndexedDB'); return kept; },
    async put(certificate) { if (putFails) throw new Error('quota'); log.put.push(certificate); },
  };
  const generate = async (algorithm) => {
    const certificate = { id: `new-${log.generated.length}`, expires: now + algorithm.expires, algorithm };
    log.generated.push(certificate);
    return certificate;
  };
  return { options: { store, generate, now: () => now, warn: (what) => log.warned.push(what) }, log, now };
}

test('the first call makes an ECDSA P-256 identity for a year and keeps it', async () => {
  const { options, log, now } = fakes({ kept: undefined });
  const identity = await loadIdentity(options);
  assert.equal(log.generated.length, 1);
  assert.deepEqual(log.generated[0].algorithm, { name: 'ECDSA', namedCurve: 'P-256', expires: IDENTITY_LIFETIME_MS });
  assert.equal(identity.expires, now + IDENTITY_LIFETIME_MS);
  assert.deepEqual(log.put, [identity]);
});

test('a kept identity is used again, unchanged: the same fingerprint call after call', async () => {
  const kept = { id: 'kept', expires: 1_000 * DAY + 200 * DAY };
  const { options, log } = fakes({ kept });
  assert.equal(await loadIdentity(options), kept);
  assert.equal(log.generated.length, 0);
  assert.equal(log.put.length, 0);
});

test('an identity within a month of lapsing (or lapsed, or malformed) is renewed and the new one kept', async () => {
  for (const kept of [{ id: 'old', expires: 1_000 * DAY + IDENTITY_RENEW_BEFORE_MS - 1 }, { id: 'gone', expires: 10 },
    { id: 'odd' }, null]) {
    const { options, log } = fakes({ kept });
    const identity = await loadIdentity(options);
    assert.notEqual(identity, kept, JSON.stringify(kept));
    assert.equal(log.generated.length, 1);
    assert.deepEqual(log.put, [identity]);
  }
});

test('a store that cannot be read or written costs stability, not the call', async () => {
  const unreadable = fakes({ kept: { id: 'kept', expires: 2_000 * DAY }, getFails: true });
  assert.equal((await loadIdentity(unreadable.options)).id, 'new-0');
  assert.deepEqual(unreadable.log.warned, ['the DTLS identity could not be read']);
  const unwritable = fakes({ kept: undefined, putFails: true });
  assert.equal((await loadIdentity(unwritable.options)).id, 'new-0');
  assert.deepEqual(unwritable.log.warned, ['the DTLS identity could not be kept']);
});

test('pages take the first free slot, each its own: two tabs of one browser never share an identity', async () => {
  const { takeSlot } = await import('../../Sources/DuetWeb/Web/js/runtime/dtls-identity.js');
  const held = new Set();
  const locks = {
    async request(name, options, callback) {
      if (held.has(name)) return callback(null);
      held.add(name);
      return callback({ name });
    },
  };
  assert.equal(await takeSlot(locks, 3), 0, 'the first page: slot 0');
  assert.equal(await takeSlot(locks, 3), 1, 'a second page while the first lives');
  held.delete('duet-dtls-0');  // the first page went away (a reload)
  assert.equal(await takeSlot(locks, 3), 0, 'the reloaded page gets slot 0 again');
  assert.equal(await takeSlot(locks, 3), 2);
  assert.equal(await takeSlot(locks, 3), 2, 'all taken: the last one is shared');
  assert.equal(await takeSlot(undefined, 3), 0, 'no Web Locks: slot 0');
});
