// What the service worker needs to show and answer a ring when no Duet page is open (issue 31), in IndexedDB (the
// worker cannot read localStorage): this browser's device id, and for each call it asked to be rung in, the link's
// key (to open the caller's sealed name), the member token (to answer) and the name given to the call.
const DB = 'duet-ringing';
const STORE = 'calls';

function open() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

async function run(mode, work) {
  const db = await open();
  try {
    return await new Promise((resolve, reject) => {
      const transaction = db.transaction(STORE, mode);
      const result = work(transaction.objectStore(STORE));
      transaction.oncomplete = () => resolve(result?.result);
      transaction.onerror = () => reject(transaction.error);
    });
  } finally {
    db.close();
  }
}

export const ringStore = {
  // {deviceId, memberToken, key, name} for a call, or undefined.
  get(roomId) { return run('readonly', (store) => store.get(roomId)); },
  put(roomId, value) { return run('readwrite', (store) => store.put(value, roomId)); },
  remove(roomId) { return run('readwrite', (store) => store.delete(roomId)); },
};
