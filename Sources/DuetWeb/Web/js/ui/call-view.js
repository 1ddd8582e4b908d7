// Words and screens of the call page, apart from the wiring so both stay small.
import { AnnounceQueue } from './announce-queue.js';

export const $ = (id) => document.getElementById(id);

export function setScreen(name) {
  if (document.body.dataset.screen === name) return;
  document.body.dataset.screen = name;
  const panel = document.querySelector(`[data-screen-panel="${name}"]`);
  // Only on a real change of screen, focus moves to its heading so keyboard and screen-reader users follow.
  const heading = panel?.querySelector('h1') ?? $('call-title');
  heading?.setAttribute('tabindex', '-1');
  heading?.focus({ preventScroll: true });
}

export function showError({ title, text, audioOnly = false, retry = true }) {
  $('error-title').textContent = title;
  $('error-text').textContent = text;
  $('error-audio-only').hidden = !audioOnly;
  $('error-retry').hidden = !retry;
  document.body.dataset.screen = '';  // an error replacing another error still takes focus
  setScreen('error');
}

export function describeFailure(failure) {
  switch (failure?.code) {
    case 'ROOM_FULL': return { title: 'This call is full', text: 'Two people are already in this call. Duet calls are one-to-one.' };
    case 'ROOM_ENDED': return { title: 'This call has ended', text: 'The host ended this call. Start a new one from the home page.' };
    case 'INVALID_ROOM_ID': return { title: 'This link is not a Duet call', text: 'Check that the whole link was copied, or start a new call.' };
  }
  if (failure?.kind === 'joinTimedOut') {
    return { title: 'Could not reach the call', text: 'The server did not answer in time. Check your connection and try again.' };
  }
  return { title: 'Could not join the call', text: failure?.message || 'Something went wrong while joining. Try again.' };
}

export function describeEnd(reason) {
  switch (reason) {
    case 'ended': return 'You ended the call for both of you.';
    case 'roomEnded': return 'The call was ended by the host.';
    case 'expired': return 'The call ended after everyone had been away for too long.';
    case 'replaced': return 'This call continued in another tab or window. Use it there, or take it back here.';
    case 'seatTaken': return 'Someone else took your place in this call while you were away.';
    default: return 'You left the call. You can rejoin while the other person is still there.';
  }
}

// The page's live region for events (#announcer): joins, leaves, the other person's mute, quality drops, devices
// that went away. (The status badge is a live region of its own: it says the connection's state, which it shows.)
// Messages queue (announce-queue.js) so one never replaces another before it is read; the same text again later is
// still read: the region is cleared first.
const announcer = new AnnounceQueue({
  write(text) {
    const region = $('announcer');
    if (!region) return;
    if (region.textContent === text) region.textContent = '';
    region.textContent = text;
  },
});

// A page going away (or into the back/forward cache) leaves nothing queued to say when it comes back stale.
globalThis.addEventListener?.('pagehide', () => announcer.clear());

// options.topic: a status that a newer message of the same topic makes stale (see announce-queue.js).
export function announce(text, options) {
  announcer.say(text, options);
}

// What the live region has said, oldest first (bounded): window.duet.announcements.
export function announcements() {
  return [...announcer.spoken];
}

// A toggle button's state: `pressed` (aria-pressed: the name stays), or `active` with a `name` that changes
// (the look follows data-active); `title` says what a click does now, with its key.
export function setToggle(button, { pressed, active, name, title }) {
  if (!button) return;
  if (pressed !== undefined) button.setAttribute('aria-pressed', String(pressed));
  if (active !== undefined) button.dataset.active = String(active);
  if (name !== undefined) {
    if (button.classList.contains('icon')) button.setAttribute('aria-label', name);
    else button.textContent = name;
  }
  if (title !== undefined) button.title = title;
}
