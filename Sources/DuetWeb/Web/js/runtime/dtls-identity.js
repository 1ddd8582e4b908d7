// A stable DTLS identity per browser: an RTCCertificate made once and kept in IndexedDB (certificates are
// structured-cloneable), given to every RTCPeerConnection. Its fingerprint is what the other person's safety code
// is computed from (verification/safety-code.js), so it must not change from call to call; a browser that made a new
// one each time would show a new code every call and teach people to ignore it. docs/security.md.
//
// One per open call page, in fact: two tabs of one browser calling each other must not present the same certificate
// (Chromium then connects no media), and two tabs starting at once must not race to make the one identity. So a page
// takes the first free *slot* (a Web Lock held while the page lives: `duet-dtls-0`, `-1`, …) and that slot's
// identity. Someone with one call open always gets slot 0: the same identity call after call, reload after reload.
//
//   const certificate = await dtlsCertificate();   // RTCCertificate, or null when the browser cannot make one
//   new RTCPeerConnection({ ...configuration, certificates: certificate ? [certificate] : undefined });

export const IDENTITY_LIFETIME_MS = 365 * 24 * 3600 * 1000;
// Renewed this long before it expires, so no call starts with a certificate about to lapse mid-call.
export const IDENTITY_RENEW_BEFORE_MS = 30 * 24 * 3600 * 1000;
const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256' };
// How long a call waits for the identity before going on without it (IndexedDB answers in milliseconds; one that
// hangs must not hold the call).
export const IDENTITY_LOAD_LIMIT_MS = 2000;

// The identity, from `store` ({get(): Promise<RTCCertificate|undefined>, put(certificate): Promise}) when it holds
// a valid one, else a new one (kept in the store). A store that fails (private browsing, quota) costs only the
// stability: the call gets a fresh certificate and goes on. generate: RTCPeerConnection.generateCertificate.
export async function loadIdentity({ store, generate, now = () => Date.now(), warn = () => {} }) {
  let kept;
  try { kept = await store.get(); } catch (error) { warn('the DTLS identity could not be read', error); }
  if (kept && typeof kept.expires === 'number' && kept.expires - now() > IDENTITY_RENEW_BEFORE_MS) return kept;
  const fresh = await generate({ ...ALGORITHM, expires: IDENTITY_LIFETIME_MS });
  try { await store.put(fresh); } catch (error) { warn('the DTLS identity could not be kept', error); }
  return fresh;
}

// IndexedDB as loadIdentity's store: database `duet`, object store `identity`, key `dtls-<slot>`.
export function indexedDbStore(slot = 0, indexedDB = globalThis.indexedDB) {
  const open = () => new Promise((resolve, reject) => {
    const request = indexedDB.open('duet', 1);
    request.onupgradeneeded = () => request.result.createObjectStore('identity');
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  const run = async (mode, work) => {
    const db = await open();
    try {
      return await new Promise((resolve, reject) => {
        const transaction = db.transaction('identity', mode);
        const request = work(transaction.objectStore('identity'));
        transaction.oncomplete = () => resolve(request.result);
        transaction.onerror = () => reject(transaction.error);
        transaction.onabort = () => reject(transaction.error);
      });
    } finally {
      db.close();
    }
  };
  return {
    get: () => run('readonly', (store) => store.get(`dtls-${slot}`)),
    put: (certificate) => run('readwrite', (store) => store.put(certificate, `dtls-${slot}`)),
  };
}

export const IDENTITY_SLOTS = 8;

// The first slot whose lock is free, held until the page goes away (the lock's promise never settles before);
// slot 0 without Web Locks, and a page that finds all taken shares the last one.
export async function takeSlot(locks = globalThis.navigator?.locks, slots = IDENTITY_SLOTS) {
  if (typeof locks?.request !== 'function') return 0;
  for (let slot = 0; slot < slots; slot += 1) {
    const taken = await new Promise((resolve) => {
      locks.request(`duet-dtls-${slot}`, { ifAvailable: true }, (lock) => {
        resolve(lock !== null);
        return lock ? new Promise(() => {}) : undefined;  // held for the page's life
      }).catch(() => resolve(false));
    });
    if (taken) return slot;
  }
  return slots - 1;
}

let identity = null;

// The page's identity, made or loaded once per page; null when this browser has no generateCertificate or it fails
// (the peer connection then makes its own, as it always did).
export function dtlsCertificate() {
  identity ??= (async () => {
    const Peer = globalThis.RTCPeerConnection;
    if (typeof Peer?.generateCertificate !== 'function') return null;
    // Without IndexedDB the identity lasts as long as the page.
    const slot = await takeSlot().catch(() => 0);
    const store = globalThis.indexedDB ? indexedDbStore(slot) : { get: async () => undefined, put: async () => {} };
    try {
      return await loadIdentity({
        store, generate: (algorithm) => Peer.generateCertificate(algorithm),
        warn: (what, error) => console.warn(what, error),
      });
    } catch (error) {
      console.warn('no DTLS identity of our own', error);
      return null;
    }
  })();
  return identity;
}

// The identity, or null if it is not there within `limitMs`: the call then goes on with a certificate of its own.
export function dtlsCertificateWithin(limitMs = IDENTITY_LOAD_LIMIT_MS) {
  let timer;
  const late = new Promise((resolve) => { timer = setTimeout(() => resolve(null), limitMs); });
  return Promise.race([dtlsCertificate(), late]).finally(() => clearTimeout(timer));
}
