// Words and screens of the call page, apart from the wiring so both stay small.
export const $ = (id) => document.getElementById(id);

export function setScreen(name) {
  document.body.dataset.screen = name;
  const panel = document.querySelector(`[data-screen-panel="${name}"]`);
  // Move focus to the new screen's heading so keyboard and screen-reader users follow along.
  panel?.querySelector('h1')?.setAttribute('tabindex', '-1');
  panel?.querySelector('h1')?.focus({ preventScroll: true });
}

export function showError({ title, text, audioOnly = false, retry = true }) {
  $('error-title').textContent = title;
  $('error-text').textContent = text;
  $('error-audio-only').hidden = !audioOnly;
  $('error-retry').hidden = !retry;
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
    case 'seatTaken': return 'Someone else took your place in this call while you were away.';
    default: return 'You left the call. You can rejoin while the other person is still there.';
  }
}
