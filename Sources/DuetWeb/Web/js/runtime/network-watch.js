// The browser's hints that the network changed: `online` (back from offline) and Network Information
// changes (Wi-Fi ↔ cellular). The engine decides whether either is worth an ICE restart.

export function watchNetwork(feed) {
  const online = () => feed({ type: 'networkOnline' });
  const changed = () => feed({ type: 'networkPathChanged' });
  const offline = () => feed({ type: 'networkOffline' });
  window.addEventListener('offline', offline);
  window.addEventListener('online', online);
  navigator.connection?.addEventListener?.('change', changed);
  return () => {
    window.removeEventListener('offline', offline);
    window.removeEventListener('online', online);
    navigator.connection?.removeEventListener?.('change', changed);
  };
}
