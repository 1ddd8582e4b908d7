// What the page shows of a verified call (issue 19): "Verified" or "Not verified" with the safety code the two
// people can read to each other, and the interception screen, which nothing on the page dismisses.
import { $, announce, setScreen } from './call-view.js';

/** "123456" → "123 456": easier to read aloud. */
export function spacedCode(code) { return code ? `${code.slice(0, 3)} ${code.slice(3)}` : ''; }

export class VerificationView {
  constructor() {
    this.said = null;
  }

  /** state: DuetCall's {verification, safetyCode}; keyed: whether the link carries a key the page can check with. */
  render({ verification, safetyCode }, { keyed, reason = null }) {
    const chip = $('verification');
    chip.dataset.state = verification;
    $('verification-text').textContent = verification === 'verified' ? 'Verified'
      : verification === 'intercepted' ? 'May be intercepted'
        : reason ?? (keyed ? 'Not verified yet' : 'Not verified');
    chip.title = verification === 'verified'
      ? 'The key in your call link proved the other side’s connection. Read the code to each other: the same code means nobody is in the middle.'
      : keyed ? 'Waiting for the other side’s connection to be proven by your link’s key.'
        : 'This link has no key, so Duet cannot prove who is on the other end. Compare the code aloud: different codes mean someone is in the middle.';
    const code = $('safety-code');
    code.hidden = !safetyCode;
    code.textContent = safetyCode ? `Code ${spacedCode(safetyCode)}` : '';
    code.setAttribute('aria-label', safetyCode ? `Safety code ${safetyCode.split('').join(' ')}` : '');
    if (verification === 'verified' && this.said !== 'verified') announce(`Call verified. Safety code ${spacedCode(safetyCode ?? '')}.`);
    this.said = verification;
  }

  /** The call was ended because someone may be in the middle: this screen stays (no Rejoin, no Try again). */
  showIntercepted() {
    document.body.dataset.verification = 'intercepted';
    setScreen('intercepted');
  }
}
