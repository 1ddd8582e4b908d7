// The loading guard of every page: `duet serve` serves each page that names it with its text inline
// (WebAssets.inliningScripts), so there is one source and it cannot fail to load itself.
// If the page's module, or a file it imports, fails to load (e.g. ERR_NETWORK_CHANGED mid-load) or has not
// run after 15 s, the page reloads after 0.5, 2 and 5 s; then it says so, with Try again (and tries again by
// itself when the browser comes back online). Without it, a failed module leaves a page that never starts.
(() => {
  const KEY = 'duet.loadAttempts';
  const PAUSES_MS = [500, 2000, 5000];
  let settled = false;
  const fail = () => {
    if (settled || window.duet) return;
    settled = true;
    let attempt = PAUSES_MS.length;  // no sessionStorage: no count to bound reloads by, so explain at once
    try {
      attempt = Number(sessionStorage.getItem(KEY) ?? 0);
      sessionStorage.setItem(KEY, String(attempt + 1));
    } catch {}
    if (attempt < PAUSES_MS.length) return void setTimeout(() => location.reload(), PAUSES_MS[attempt]);
    try { sessionStorage.removeItem(KEY); } catch {}
    explain();
  };
  const explain = () => {
    if (!document.body) return void addEventListener('DOMContentLoaded', explain);
    const main = document.createElement('main');
    main.className = 'home';
    main.setAttribute('role', 'alert');
    main.innerHTML = '<h1 tabindex="-1">Couldn’t load Duet</h1>' +
      '<p class="lede">Check your connection, then try again.</p>' +
      '<button type="button" class="primary">Try again</button>';
    main.querySelector('button').addEventListener('click', () => location.reload());
    addEventListener('online', () => location.reload());
    document.body.dataset.screen = 'load-failed';
    document.body.replaceChildren(main);
    main.querySelector('h1').focus();
  };
  // Load errors do not bubble; a capturing listener on window sees them. A module graph that failed to
  // load fires `error` at its <script type="module">, whichever of its files failed.
  addEventListener('error', (event) => event.target instanceof HTMLScriptElement && fail(), true);
  addEventListener('DOMContentLoaded', () => {
    if (!window.duet) return fail();  // module scripts have run (or failed) by now
    try { sessionStorage.removeItem(KEY); } catch {}
  });
  setTimeout(fail, 15000);
})();
