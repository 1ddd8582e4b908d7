// The browser's hints that the network changed: `online` (back from offline) and Network Information
// changes (Wi-Fi ↔ cellular). The engine decides whether either is worth an ICE restart.

export function watchNetwork(feed) {
  const online = () => feed({ type: 'networkOnline' });
  const changed = () => feed({ type: 'networkPathChanged' });
  // Going offline is a path change too: the engine decides whether media or signaling suffered.
  window.addEventListener('offline', changed);
  window.addEventListener('online', online);
  navigator.connection?.addEventListener?.('change', changed);
  return () => {
    window.removeEventListener('offline', changed);
    window.removeEventListener('online', online);
    navigator.connection?.removeEventListener?.('change', changed);
  };
}
