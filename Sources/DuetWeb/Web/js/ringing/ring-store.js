// What the service worker needs to show and answer a ring when no Duet page is open (issue 31), in IndexedDB (the
// worker cannot read localStorage): for each call this browser asked to be rung in, this browser's device id, the
// link's key (to open the caller's sealed name), the member token (to answer) and the name given to the call. And
// what the worker saw happen (missed, declined, answered calls), which the next page moves into the call history.
// And this browser's snapshot key (snapshot.js): its private half never leaves IndexedDB.
const DB = 'duet-ringing';
const CALLS = 'calls';
const SEEN = 'history';
const DEVICE = 'device';

function open() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB, 3);
    request.onupgradeneeded = () => {
      for (const store of [CALLS, SEEN, DEVICE]) if (!request.result.objectStoreNames.contains(store)) request.result.createObjectStore(store);
    };
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

async function run(storeName, mode, work) {
  const db = await open();
  try {
    return await new Promise((resolve, reject) => {
      const transaction = db.transaction(storeName, mode);
      const result = work(transaction.objectStore(storeName));
      transaction.oncomplete = () => resolve(result?.result);
      transaction.onerror = () => reject(transaction.error);
    });
  } finally {
    db.close();
  }
}

export const ringStore = {
  // {deviceId, memberToken, key, name, endpoint} for a call, or undefined.
  get(roomId) { return run(CALLS, 'readonly', (store) => store.get(roomId)); },
  put(roomId, value) { return run(CALLS, 'readwrite', (store) => store.put(value, roomId)); },
  remove(roomId) { return run(CALLS, 'readwrite', (store) => store.delete(roomId)); },
  // The calls this browser rings for.
  rooms() { return run(CALLS, 'readonly', (store) => store.getAllKeys()); },
  // The worker's view of a ring's end ({roomId, callId, direction: 'incoming', outcome, at, name}), one per call.
  noteSeen(entry) { return run(SEEN, 'readwrite', (store) => store.put({ at: Date.now(), direction: 'incoming', ...entry }, entry.callId)); },
  // {privateKey: CryptoKey, publicJwk} or undefined; `make` creates one the first time it is needed.
  async deviceKey(make) {
    const kept = await run(DEVICE, 'readonly', (store) => store.get('snapshot-key'));
    if (kept || !make) return kept;
    const made = await make();
    // `add`, not `put`: two tabs making one at once keep the first, and both use it (a key replaced after it was
    // registered would never open a picture).
    await run(DEVICE, 'readwrite', (store) => {
      const request = store.add(made, 'snapshot-key');
      request.onerror = (event) => { event.preventDefault(); event.stopPropagation(); };
      return request;
    }).catch(() => {});
    return run(DEVICE, 'readonly', (store) => store.get('snapshot-key'));
  },
  // Everything the worker saw, removed as it is read (a page moves it into the call history).
  async takeSeen() {
    const entries = await run(SEEN, 'readonly', (store) => store.getAll());
    if (entries?.length) await run(SEEN, 'readwrite', (store) => store.clear());
    return entries ?? [];
  },
};
